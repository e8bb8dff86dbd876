package dev.weft.agent;

import java.lang.reflect.Method;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Runs in a child JVM (see ChildJvmTest) with only the test classes on its
 * class path: the agent's classes are reached through the bootstrap loader,
 * by reflection, as an application would never need to.
 */
public final class ChildMain {
  /**
   * A stand-in for the Ktor CIO library: its selector is as the agent
   * expects, its request handler class has the name and the request field
   * the agent looks for but not the fields its advice reads. By class
   * name, its source.
   */
  static final java.util.Map<String, String> IMPOSTOR = java.util.Map.of(
      "io.ktor.network.selector.SelectorManagerSupport",
      "package io.ktor.network.selector; public class SelectorManagerSupport {"
          + " protected final void handleSelectedKeys(java.util.Set<?> a, java.util.Set<?> b) {} }",
      "io.ktor.server.cio.backend.ServerPipelineKt$startServerConnectionPipeline$1$1",
      "package io.ktor.server.cio.backend; public class ServerPipelineKt$startServerConnectionPipeline$1$1 {"
          + " public Object $request; public Object invokeSuspend(Object r) { return r; } }");

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "plain":
        // The app must run as if there were no agent.
        ExecutorService pool = Executors.newFixedThreadPool(2);
        long v = pool.submit(() -> 41L).get() + 1;
        pool.shutdown();
        System.out.println("result " + v);
        System.out.println("agent classes " + (bootstrap("Kernel") != null));
        break;
      case "requests":
        requests(Integer.parseInt(args[1]));
        break;
      case "attach":
        attach(args[1]);
        break;
      case "impostor":
        impostor(args[1]);
        break;
      default:
        throw new IllegalArgumentException(args[0]);
    }
  }

  static Class<?> bootstrap(String simpleName) {
    try {
      return Class.forName("dev.weft.agent.bootstrap." + simpleName, true, null);
    } catch (ClassNotFoundException e) {
      return null;
    }
  }

  /**
   * n "requests": each starts on this thread and hops to a pool and back.
   * Prints the packets (syscalls) and kernel writes they cost.
   */
  static void requests(int n) throws Exception {
    Class<?> context = bootstrap("Context");
    Method begin = context.getMethod("begin");
    Method restore = context.getMethod("restore", long.class);
    Method packets = bootstrap("WeftNative").getMethod("packets");
    Method writes = bootstrap("Kernel").getMethod("writes");
    ExecutorService pool = Executors.newSingleThreadExecutor();
    // Both threads register their slot (first mount) before counting starts.
    long warm = (long) begin.invoke(null);
    pool.submit(() -> 0).get();
    restore.invoke(null, warm);
    Thread.sleep(100); // the worker's own restore lands before counting starts
    long p0 = (long) packets.invoke(null);
    long w0 = (long) writes.invoke(null);
    for (int i = 0; i < n; i++) {
      long prev = (long) begin.invoke(null);
      pool.submit(() -> 0).get();
      restore.invoke(null, prev);
    }
    Thread.sleep(100); // and the last one's before counting ends
    System.out.println("packets " + ((long) packets.invoke(null) - p0));
    System.out.println("writes " + ((long) writes.invoke(null) - w0));
    pool.shutdown();
  }

  /**
   * Loads every class of the library impostor in dir (see ChildJvmTest),
   * one of which the agent cannot instrument, then checks a hand-off.
   */
  static void impostor(String dir) throws Exception {
    try (java.net.URLClassLoader loader = new java.net.URLClassLoader(
        new java.net.URL[] {new java.io.File(dir).toURI().toURL()}, ChildMain.class.getClassLoader())) {
      for (String name : IMPOSTOR.keySet()) {
        Class.forName(name, true, loader);
      }
    }
    handOff(Executors.newSingleThreadExecutor(), "task slot ");
  }

  /** Prints the slot a task of pool sees when submitted under 777, then under none, and shuts pool down. */
  static void handOff(ExecutorService pool, String label) throws Exception {
    Method swap = bootstrap("Context").getMethod("swap", long.class);
    Method slot = bootstrap("WeftNative").getMethod("currentSlot");
    swap.invoke(null, 777L);
    long seen = pool.submit(() -> (long) slot.invoke(null)).get();
    swap.invoke(null, 0L);
    long after = pool.submit(() -> (long) slot.invoke(null)).get();
    System.out.println(label + seen + " after " + after);
    pool.shutdown();
  }

  /** Loads the agent into this very JVM, then checks a hand-off. */
  static void attach(String jar) throws Exception {
    // Started before the attach: their classes are loaded already and must be retransformed.
    ExecutorService pool = Executors.newSingleThreadExecutor();
    pool.submit(() -> 0).get();
    String pid = String.valueOf(ProcessHandle.current().pid());
    Class<?> vm = Class.forName("com.sun.tools.attach.VirtualMachine");
    Object handle = vm.getMethod("attach", String.class).invoke(null, pid);
    vm.getMethod("loadAgent", String.class, String.class).invoke(handle, jar, "debug=true");
    vm.getMethod("detach").invoke(handle);
    handOff(pool, "attached task slot ");
  }
}
