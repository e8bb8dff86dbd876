package dev.weft.agent;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.weft.agent.bootstrap.Audit;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Test helpers: one version of a library in a class loader of its own, driven by reflection. */
final class Isolated {
  private Isolated() {}

  /**
   * A loader over every jar in the directory the system property names, plus
   * version (e.g. weft.test.tomcat + 11.0.29); its parent is the tests' loader.
   */
  static URLClassLoader loader(String property, String version) throws Exception {
    return new URLClassLoader(jars(property, version).toArray(new URL[0]), Isolated.class.getClassLoader());
  }

  /** Every jar in the directory the system property names, plus version. */
  private static List<URL> jars(String property, String version) throws Exception {
    File dir = new File(System.getProperty(property), version);
    File[] jars = dir.listFiles((d, n) -> n.endsWith(".jar"));
    assertTrue(jars != null && jars.length > 0, "jars in " + dir);
    List<URL> urls = new ArrayList<>();
    for (File j : jars) {
      urls.add(j.toURI().toURL());
    }
    return urls;
  }

  /**
   * Like loader, with the classes whose names start with one of prefixes
   * (the library, and test classes compiled against the class path's
   * version of it) taken from this loader first, and resources too (so the
   * agent reads this version). A test class named there is loaded again
   * from the tests' class directory, next to the older library.
   */
  static URLClassLoader childFirst(String property, String version, String... prefixes) throws Exception {
    List<URL> urls = jars(property, version);
    urls.add(Isolated.class.getProtectionDomain().getCodeSource().getLocation());
    return new URLClassLoader(urls.toArray(new URL[0]), Isolated.class.getClassLoader()) {
      @Override
      protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        boolean own = false;
        for (String p : prefixes) {
          own |= name.startsWith(p);
        }
        if (!own) {
          return super.loadClass(name, resolve);
        }
        synchronized (getClassLoadingLock(name)) {
          Class<?> c = findLoadedClass(name);
          if (c == null) {
            c = findClass(name);
          }
          if (resolve) {
            resolveClass(c);
          }
          return c;
        }
      }

      @Override
      public URL getResource(String name) {
        URL u = findResource(name);
        return u != null ? u : super.getResource(name);
      }

      @Override
      public Enumeration<URL> getResources(String name) throws IOException {
        List<URL> all = Collections.list(findResources(name));
        all.addAll(Collections.list(getParent().getResources(name)));
        return Collections.enumeration(all);
      }
    };
  }

  /** Calls the public method name of target whose parameter count matches args (the first found). */
  static Object call(Object target, String name, Object... args) throws Exception {
    Class<?> c = target instanceof Class ? (Class<?>) target : target.getClass();
    for (Method m : c.getMethods()) {
      if (m.getName().equals(name) && m.getParameterCount() == args.length && fits(m, args)) {
        m.setAccessible(true);
        return m.invoke(target instanceof Class ? null : target, args);
      }
    }
    throw new NoSuchMethodException(c.getName() + "." + name + "/" + args.length);
  }

  private static boolean fits(Method m, Object[] args) {
    Class<?>[] types = m.getParameterTypes();
    for (int i = 0; i < args.length; i++) {
      if (args[i] == null) {
        continue;
      }
      Class<?> t = types[i].isPrimitive() ? boxed(types[i]) : types[i];
      if (!t.isInstance(args[i])) {
        return false;
      }
    }
    return true;
  }

  private static Class<?> boxed(Class<?> p) {
    return p == int.class ? Integer.class : p == long.class ? Long.class : p == boolean.class ? Boolean.class : p;
  }

  /**
   * The slot each request GET /r/<id> to port was written under, from the
   * audit's records of NIO writes (a request head written from one buffer).
   */
  static Map<Long, Long> requestWrites(int port) {
    Map<Long, Long> seen = new HashMap<>();
    for (Audit.Record r : Audit.snapshot()) {
      if (r.write && r.remotePort == port && r.head.startsWith("GET /r/")) {
        int end = r.head.indexOf(' ', 7);
        seen.put(Long.parseLong(r.head.substring(7, end)), r.slot);
      }
    }
    return seen;
  }
}
