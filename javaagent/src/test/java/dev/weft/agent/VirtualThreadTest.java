package dev.weft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.weft.agent.bootstrap.Context;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/** JDK 21+ only (skipped on 17): compiled for 17, so virtual threads are reached by reflection. */
class VirtualThreadTest {
  static Thread startVirtual(Runnable r) throws Exception {
    Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
    return (Thread) Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class).invoke(builder, r);
  }

  static ExecutorService perTask() throws Exception {
    return (ExecutorService) java.util.concurrent.Executors.class
        .getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
  }

  static boolean hasVirtualThreads() {
    return Runtime.version().feature() >= 21;
  }

  /** Carrier of the calling virtual thread, from its toString ("VirtualThread[#22]/runnable@ForkJoinPool-1-worker-1"). */
  static String carrier() {
    String s = Thread.currentThread().toString();
    return s.substring(s.indexOf('@') + 1);
  }

  @Test
  void virtualThreadKeepsItsIdAcrossCarrierChanges() throws Exception {
    assumeTrue(hasVirtualThreads(), "no virtual threads before JDK 21");
    int n = 64;
    ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
    Set<String> carriers = ConcurrentHashMap.newKeySet();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      long id = Slots.freshId();
      threads.add(startVirtual(() -> {
        Context.swap(id);
        for (int step = 0; step < 20; step++) {
          carriers.add(carrier());
          if (Slots.now() != id) {
            failures.add("step " + step + ": slot " + Slots.now() + " != " + id);
          }
          if (step % 2 == 0) {
            try {
              Thread.sleep(1);
            } catch (InterruptedException e) {
              return;
            }
          } else {
            LockSupport.parkNanos(100_000);
          }
        }
      }));
    }
    // Virtual threads without an id share the same carriers: they must see none.
    for (int i = 0; i < 16; i++) {
      threads.add(startVirtual(() -> {
        for (int step = 0; step < 20; step++) {
          if (Slots.now() != 0) {
            failures.add("a virtual thread with no id saw " + Slots.now());
          }
          LockSupport.parkNanos(200_000);
        }
      }));
    }
    for (Thread t : threads) {
      t.join();
    }
    assertTrue(failures.isEmpty(), failures.toString());
    assertTrue(carriers.size() > 1, "expected more than one carrier, saw " + carriers);
  }

  @Test
  void perTaskExecutorInheritsSubmittersId() throws Exception {
    assumeTrue(hasVirtualThreads(), "no virtual threads before JDK 21");
    long id = Slots.freshId();
    ExecutorService vt = perTask();
    try {
      Future<Long>[] f = new Future[1];
      Slots.under(id, () -> f[0] = vt.submit(() -> {
        Thread.sleep(5);
        return Slots.now();
      }));
      assertEquals(id, f[0].get());
      assertEquals(0, vt.submit(Slots::now).get());
    } finally {
      vt.shutdown();
    }
  }
}
