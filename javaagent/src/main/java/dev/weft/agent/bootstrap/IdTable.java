package dev.weft.agent.bootstrap;

import java.lang.ref.WeakReference;

/**
 * Object -> logical id, by identity, with weak keys and a hard cap: a task
 * that is never run, or an element never received, neither stays alive
 * because of the table nor makes it grow. Striped locks keep hand-offs on
 * different threads from queueing on one lock. A full stripe first drops
 * entries whose keys were collected, then, if still full, everything: losing
 * a few ids is better than growing.
 */
public final class IdTable {
  private static final int STRIPES = 16;
  private static final int BUCKETS = 1024; // per stripe, power of two

  private final Stripe[] stripes = new Stripe[STRIPES];
  private final int maxPerStripe;

  /** @param capacity most entries kept at once (spread over the stripes) */
  public IdTable(int capacity) {
    this.maxPerStripe = Math.max(16, capacity / STRIPES);
    for (int i = 0; i < STRIPES; i++) {
      stripes[i] = new Stripe();
    }
  }

  private static int hash(Object key) {
    int h = System.identityHashCode(key);
    return h ^ (h >>> 16);
  }

  private Stripe stripe(int h) {
    return stripes[(h >>> 10) & (STRIPES - 1)];
  }

  /** Sets the id of key (an id of 0 removes it). */
  public void put(Object key, long id) {
    if (key == null) {
      return;
    }
    int h = hash(key);
    stripe(h).put(key, h, id, true, maxPerStripe);
  }

  /** Sets the id of key unless it has one already. */
  public void putIfAbsent(Object key, long id) {
    if (key == null || id == 0) {
      return;
    }
    int h = hash(key);
    stripe(h).put(key, h, id, false, maxPerStripe);
  }

  /** The id of key, or 0. */
  public long get(Object key) {
    if (key == null) {
      return 0;
    }
    int h = hash(key);
    return stripe(h).get(key, h, false);
  }

  /** Removes key and returns its id, or 0. */
  public long take(Object key) {
    if (key == null) {
      return 0;
    }
    int h = hash(key);
    return stripe(h).get(key, h, true);
  }

  /** Entries held now (cleared keys included until swept). */
  public int size() {
    int n = 0;
    for (Stripe s : stripes) {
      synchronized (s) {
        n += s.size;
      }
    }
    return n;
  }

  private static final class Entry extends WeakReference<Object> {
    final int hash;
    long id;
    Entry next;

    Entry(Object key, int hash, long id, Entry next) {
      super(key);
      this.hash = hash;
      this.id = id;
      this.next = next;
    }
  }

  private static final class Stripe {
    private Entry[] table = new Entry[BUCKETS];
    int size;

    synchronized void put(Object key, int h, long id, boolean replace, int max) {
      int i = h & (BUCKETS - 1);
      Entry prev = null;
      for (Entry e = table[i]; e != null; ) {
        Object k = e.get();
        Entry next = e.next;
        if (k == key) {
          if (id == 0) {
            unlink(i, prev, e);
          } else if (replace) {
            e.id = id;
          }
          return;
        }
        if (k == null) {
          unlink(i, prev, e);
        } else {
          prev = e;
        }
        e = next;
      }
      if (id == 0) {
        return;
      }
      if (size >= max) {
        sweep();
        if (size >= max) {
          table = new Entry[BUCKETS];
          size = 0;
        }
      }
      table[i] = new Entry(key, h, id, table[i]);
      size++;
    }

    synchronized long get(Object key, int h, boolean remove) {
      int i = h & (BUCKETS - 1);
      Entry prev = null;
      for (Entry e = table[i]; e != null; e = e.next) {
        if (e.get() == key) {
          if (remove) {
            unlink(i, prev, e);
          }
          return e.id;
        }
        prev = e;
      }
      return 0;
    }

    private void unlink(int i, Entry prev, Entry e) {
      if (prev == null) {
        table[i] = e.next;
      } else {
        prev.next = e.next;
      }
      size--;
    }

    private void sweep() {
      for (int i = 0; i < BUCKETS; i++) {
        Entry prev = null;
        for (Entry e = table[i]; e != null; e = e.next) {
          if (e.get() == null) {
            unlink(i, prev, e);
          } else {
            prev = e;
          }
        }
      }
    }
  }
}
