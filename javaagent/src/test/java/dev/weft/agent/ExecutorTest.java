package dev.weft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;
import java.util.concurrent.RecursiveTask;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

class ExecutorTest {
  // One worker, so every task runs on the same OS thread as the one before it.
  static final ExecutorService ONE = Executors.newSingleThreadExecutor();
  static final ScheduledExecutorService SCHEDULED = Executors.newSingleThreadScheduledExecutor();

  @AfterAll
  static void stop() {
    ONE.shutdownNow();
    SCHEDULED.shutdownNow();
  }

  static long slotOn(ExecutorService pool) throws Exception {
    return pool.submit(Slots::now).get();
  }

  @Test
  void submittedTaskRunsUnderSubmittersId() throws Exception {
    long id = Slots.freshId();
    AtomicLong seen = new AtomicLong(-1);
    Future<?>[] f = new Future<?>[1];
    Slots.under(id, () -> f[0] = ONE.submit(() -> seen.set(Slots.now())));
    f[0].get();
    assertEquals(id, seen.get());
    assertEquals(0, slotOn(ONE), "the worker is its own key again after the task");
    assertEquals(0, Slots.now(), "the submitter got its previous value back");
  }

  @Test
  void executeOfPlainRunnableAndLambda() throws Exception {
    long id = Slots.freshId();
    AtomicLong seen = new AtomicLong(-1);
    CompletableFuture<Void> done = new CompletableFuture<>();
    Slots.under(id, () -> ONE.execute(() -> {
      seen.set(Slots.now());
      done.complete(null);
    }));
    done.get(5, TimeUnit.SECONDS);
    assertEquals(id, seen.get());
    assertEquals(0, slotOn(ONE));
  }

  @Test
  void previousValueRestoredWhenTaskThrows() throws Exception {
    long id = Slots.freshId();
    Future<?>[] f = new Future<?>[1];
    Slots.under(id, () -> f[0] = ONE.submit(() -> {
      assertEquals(id, Slots.now());
      throw new IllegalStateException("boom");
    }));
    assertThrows(ExecutionException.class, () -> f[0].get());
    CompletableFuture<Void> done = new CompletableFuture<>();
    Slots.under(id, () -> ONE.execute(() -> {
      done.complete(null);
      throw new IllegalStateException("boom in execute: kills the worker thread");
    }));
    done.get(5, TimeUnit.SECONDS);
    assertEquals(0, slotOn(ONE));
  }

  @Test
  void nestedSubmitKeepsTheId() throws Exception {
    long id = Slots.freshId();
    ExecutorService other = Executors.newFixedThreadPool(2);
    try {
      Future<Long>[] f = new Future[1];
      Slots.under(id, () -> f[0] = ONE.submit(() -> other.submit(Slots::now).get()));
      assertEquals(id, f[0].get());
    } finally {
      other.shutdownNow();
    }
  }

  @Test
  void twoRequestsOnOnePoolKeepTheirOwnIds() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try {
      for (int round = 0; round < 50; round++) {
        long a = Slots.freshId();
        long b = Slots.freshId();
        Future<Long>[] fa = new Future[1];
        Future<Long>[] fb = new Future[1];
        Slots.under(a, () -> fa[0] = pool.submit(Slots::now));
        Slots.under(b, () -> fb[0] = pool.submit(Slots::now));
        Future<Long> none = pool.submit(Slots::now);
        assertEquals(a, fa[0].get());
        assertEquals(b, fb[0].get());
        assertEquals(0, none.get());
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void scheduledTask() throws Exception {
    long id = Slots.freshId();
    Future<Long>[] f = new Future[1];
    Slots.under(id, () -> f[0] = SCHEDULED.schedule(Slots::now, 20, TimeUnit.MILLISECONDS));
    assertEquals(id, f[0].get());
    assertEquals(0, SCHEDULED.schedule(Slots::now, 1, TimeUnit.MILLISECONDS).get());
  }

  @Test
  void forkJoinAndCompletableFuture() throws Exception {
    long id = Slots.freshId();
    CompletableFuture<Long>[] cf = new CompletableFuture[1];
    Future<Long>[] fj = new Future[1];
    ForkJoinPool pool = new ForkJoinPool(2);
    try {
      Slots.under(id, () -> {
        cf[0] = CompletableFuture.supplyAsync(Slots::now, pool);
        fj[0] = pool.submit(new Sum(0, 64));
      });
      assertEquals(id, cf[0].get());
      assertEquals(id * 64, fj[0].get(), "forked subtasks carry the id too");
      assertEquals(0, CompletableFuture.supplyAsync(Slots::now, pool).get());
    } finally {
      pool.shutdownNow();
    }
  }

  /** Sums the slot over leaves, forking on the way down. */
  static final class Sum extends RecursiveTask<Long> {
    final int from;
    final int to;

    Sum(int from, int to) {
      this.from = from;
      this.to = to;
    }

    @Override
    protected Long compute() {
      if (to - from <= 4) {
        long s = 0;
        for (int i = from; i < to; i++) {
          s += Slots.now();
        }
        return s;
      }
      int mid = (from + to) / 2;
      Sum left = new Sum(from, mid);
      left.fork();
      return new Sum(mid, to).compute() + left.join();
    }
  }
}
