package dev.weft.agent.install;

import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.nameStartsWith;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import dev.weft.agent.AgentArgs;
import dev.weft.agent.bootstrap.Context;
import dev.weft.agent.bootstrap.Coroutines;
import dev.weft.agent.bootstrap.Elements;
import dev.weft.agent.bootstrap.H2Streams;
import dev.weft.agent.bootstrap.Ids;
import dev.weft.agent.bootstrap.Kernel;
import dev.weft.agent.bootstrap.ServerStreams;
import dev.weft.agent.bootstrap.Tasks;
import dev.weft.agent.bootstrap.VirtualThreads;
import dev.weft.agent.bootstrap.WeftNative;
import java.io.File;
import java.lang.instrument.Instrumentation;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.agent.builder.ResettableClassFileTransformer;
import net.bytebuddy.asm.MemberSubstitution;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.matcher.ElementMatcher;
import net.bytebuddy.matcher.ElementMatchers;

/**
 * Loaded from the bootstrap class path by Premain. Either installs every hook
 * or, on any failure, nothing: one line on stderr and the application runs as
 * if the agent were absent.
 */
public final class Installer {
  private Installer() {}

  private static boolean installed;

  public static synchronized void install(String rawArgs, Instrumentation inst, File jar, boolean attached) {
    if (installed) {
      // e.g. both -javaagent and JAVA_TOOL_OPTIONS name the agent, or weft
      // attached to a JVM that already has it: a (re)started weft is asking,
      // so have every thread register its slot again now.
      try {
        WeftNative.refresh();
      } catch (Throwable ignored) {
        // ioctl mode, or the library is not loaded: nothing to refresh
      }
      return;
    }
    ResettableClassFileTransformer transformer = null;
    Report report = new Report();
    try {
      AgentArgs args = AgentArgs.parse(rawArgs);
      if (!inst.isRetransformClassesSupported()) {
        throw new UnsupportedOperationException("this JVM cannot retransform classes");
      }
      NativeLibrary.load(jar);
      Kernel.configure(args.ioctl, args.count);
      warmUp();

      List<Module> modules = Hooks.all(args.audit);
      transformer = builder(modules, jar, report, args, inst).installOn(inst);
      installed = true;
      if (!args.ioctl && args.refreshSeconds > 0) {
        startRefresher(args.refreshSeconds);
      }
      if (args.debug) {
        System.err.println("weft-agent: active: mode=" + args.mode() + (attached ? " (attached)" : "")
            + ", " + modules.size() + " modules, instrumented so far " + report.transformed.keySet()
            + (report.errors.isEmpty() ? "" : ", errors " + report.errors));
        report.installed = true;
      }
    } catch (Throwable t) {
      if (transformer != null) {
        try {
          transformer.reset(inst, AgentBuilder.RedefinitionStrategy.RETRANSFORMATION);
        } catch (Throwable ignored) {
          // nothing more to undo with
        }
      }
      System.err.println("weft-agent: inactive: " + oneLine(t));
    }
  }

  private static String oneLine(Throwable t) {
    String m = t.getMessage();
    String s = t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    return s.replace('\n', ' ');
  }

  /**
   * Runs every runtime path once, so that no bootstrap class is loaded or
   * initialised for the first time inside a JDK internal (a virtual thread's
   * mount, a pool's worker loop) where that could recurse or deadlock.
   */
  private static void warmUp() {
    long prev = Context.swap(Ids.next());
    Context.restore(prev);
    Object probe = new Object();
    Tasks.capture(probe);
    Tasks.captureConstructed(probe);
    Tasks.exit(Tasks.enter(probe));
    Coroutines.created(probe);
    Coroutines.continuationDispatched(probe);
    Coroutines.assign(probe, 0);
    Coroutines.exit(Coroutines.enter(probe), Coroutines.currentTask());
    Coroutines.adopt(Elements.received(probe));
    Elements.sent(probe);
    Elements.peek(probe);
    VirtualThreads.mounted(VirtualThreads.beforeMount());
    VirtualThreads.unmounted(VirtualThreads.beforeUnmount());
    WeftNative.currentSlot();
    ServerStreams.warmUp(probe);
    H2Streams.flushing(probe);
  }

  private static AgentBuilder builder(List<Module> modules, File jar, Report report, AgentArgs args,
      Instrumentation inst) throws Exception {
    ClassFileLocator agentClasses = ClassFileLocator.ForJarFile.of(jar);
    AgentBuilder b = new AgentBuilder.Default()
        .disableClassFormatChanges()
        .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
        .with(AgentBuilder.DescriptionStrategy.Default.HYBRID)
        .with(AgentBuilder.PoolStrategy.Default.FAST)
        .with(AgentBuilder.TypeStrategy.Default.DECORATE)
        .with(report.debug(args.debug))
        // Advice inlined into a named JDK module other than java.base (java.net.http)
        // calls the agent's bootstrap classes: that module must read theirs.
        .assureReadEdgeTo(inst, Context.class)
        // JDK classes are wanted; the agent's own and its ByteBuddy are not.
        .ignore(nameStartsWith("dev.weft.agent.").or(ElementMatchers.isSynthetic()));

    // One transformer per class, with every advice its module has for it.
    Map<String, AgentBuilder.Transformer.ForAdvice> byType = new LinkedHashMap<>();
    Map<String, List<AgentBuilder.Transformer>> loopsOf = new LinkedHashMap<>();
    Map<String, Module> moduleOf = new LinkedHashMap<>();
    for (Module m : modules) {
      for (Hooks.Hook h : m.hooks) {
        moduleOf.put(h.type, m);
        if (h.isTaskLoop()) {
          loopsOf.computeIfAbsent(h.type, k -> new ArrayList<>()).add(taskLoop(h.methods));
          byType.putIfAbsent(h.type, new AgentBuilder.Transformer.ForAdvice().include(agentClasses));
          continue;
        }
        AgentBuilder.Transformer.ForAdvice t = byType.get(h.type);
        if (t == null) {
          t = new AgentBuilder.Transformer.ForAdvice()
              .include(agentClasses);
        }
        byType.put(h.type, t.advice(h.methods, h.advice));
      }
    }
    report.modules(moduleOf);
    for (Map.Entry<String, AgentBuilder.Transformer.ForAdvice> e : byType.entrySet()) {
      Module m = moduleOf.get(e.getKey());
      AgentBuilder.Identified.Extendable ext = b.type(named(e.getKey()), new Gate(m.marker))
          .transform(e.getValue());
      for (AgentBuilder.Transformer loop : loopsOf.getOrDefault(e.getKey(), List.of())) {
        ext = ext.transform(loop);
      }
      b = ext;
    }
    return b;
  }

  /** A module applies only where its library's marker class is visible. */
  static final class Gate extends ElementMatcher.Junction.AbstractBase<ClassLoader> {
    private final String resource;

    Gate(String marker) {
      this.resource = marker == null ? null : marker.replace('.', '/') + ".class";
    }

    @Override
    public boolean matches(ClassLoader loader) {
      return resource == null || (loader != null && loader.getResource(resource) != null);
    }
  }

  /** In the methods loop matches, each task.run() becomes Tasks.run(task) (see Hooks.Hook.taskLoop). */
  private static AgentBuilder.Transformer taskLoop(ElementMatcher<? super MethodDescription> loop)
      throws NoSuchMethodException {
    MemberSubstitution.WithoutSpecification.ForMatchedMethod run = MemberSubstitution.relaxed()
        .method(named("run").and(takesArguments(0))
            .and(ElementMatchers.isDeclaredBy(Runnable.class)));
    MemberSubstitution substitution = run.replaceWith(Tasks.class.getMethod("run", Runnable.class));
    return (builder, type, loader, module, domain) -> builder.visit(substitution.on(loop));
  }

  /** Asks every thread to register its slot again now and then (weft may start after the app). */
  private static void startRefresher(int seconds) {
    Thread t = new Thread(() -> {
      for (;;) {
        try {
          Thread.sleep(seconds * 1000L);
        } catch (InterruptedException e) {
          return;
        }
        WeftNative.refresh();
      }
    }, "weft-agent-refresh");
    t.setDaemon(true);
    t.start();
  }

  /**
   * What got instrumented, and what failed. Each module says once per class
   * loader that it applied, with the library version found there; a class that
   * cannot be instrumented is named (the others stay instrumented).
   */
  static final class Report extends AgentBuilder.Listener.Adapter {
    final Map<String, Boolean> transformed = new java.util.concurrent.ConcurrentSkipListMap<>();
    final Map<String, String> errors = new java.util.concurrent.ConcurrentSkipListMap<>();
    private final java.util.Set<String> applied = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private Map<String, Module> moduleOf = new LinkedHashMap<>();
    private boolean debug;
    volatile boolean installed;

    Report debug(boolean on) {
      debug = on;
      return this;
    }

    void modules(Map<String, Module> byType) {
      moduleOf = byType;
    }

    @Override
    public void onTransformation(net.bytebuddy.description.type.TypeDescription type, ClassLoader loader,
        net.bytebuddy.utility.JavaModule module, boolean loaded, net.bytebuddy.dynamic.DynamicType dynamicType) {
      transformed.put(type.getName(), Boolean.TRUE);
      if (debug && installed) {
        System.err.println("weft-agent: instrumented " + type.getName()); // once per class, at load
      }
      Module m = moduleOf.get(type.getName());
      if (m != null && applied.add(m.name + "@" + System.identityHashCode(loader))) {
        announce(m, loader);
      }
    }

    @Override
    public void onError(String typeName, ClassLoader loader, net.bytebuddy.utility.JavaModule module,
        boolean loaded, Throwable throwable) {
      errors.put(typeName, oneLine(throwable));
      Module m = moduleOf.get(typeName);
      System.err.println("weft-agent: could not instrument " + typeName + (m == null ? "" : " (module " + m.name + ")")
          + ": " + oneLine(throwable));
    }

    /**
     * Off the class-loading path: the version probe may load the library's
     * classes, which must not happen inside the transformation of one. Not a
     * daemon, so that a JVM that exits at once still prints it (200 ms later).
     */
    private static void announce(Module m, ClassLoader loader) {
      Thread t = new Thread(() -> {
        try {
          Thread.sleep(200);
        } catch (InterruptedException e) {
          return;
        }
        System.err.println("weft-agent: module " + m.name + " (" + m.library + ") applied: " + m.versionIn(loader));
      }, "weft-agent-report");
      t.start();
    }
  }
}
