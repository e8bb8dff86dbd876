package dev.weft.agent.install;

import java.util.ArrayList;
import java.util.List;

/**
 * One instrumentation module: the hooks for one library over a version range,
 * applied only where a class loader can see the library's marker class.
 */
final class Module {
  /** The library's version as a class loader sees it, or null when it cannot tell. */
  interface VersionProbe {
    String version(ClassLoader loader) throws Exception;
  }

  final String name;
  final String library;
  /** A class every supported version has (null: a JDK module, always present). */
  final String marker;
  final VersionProbe probe;
  final List<Hooks.Hook> hooks = new ArrayList<>();

  Module(String name, String library, String marker, VersionProbe probe) {
    this.name = name;
    this.library = library;
    this.marker = marker;
    this.probe = probe;
  }

  Module hook(Hooks.Hook h) {
    hooks.add(h);
    return this;
  }

  /** What the library reports for itself, best effort (shaded jars lose their manifests). */
  String versionIn(ClassLoader loader) {
    try {
      String v = probe == null ? null : probe.version(loader);
      return v == null || v.isEmpty() ? "version unknown" : v;
    } catch (Throwable t) {
      return "version unknown";
    }
  }

  /** Implementation-Version of the package of a class of the library, if its jar kept one. */
  static VersionProbe packageVersion(String className) {
    return loader -> {
      Package p = Class.forName(className, false, loader).getPackage();
      return p == null ? null : p.getImplementationVersion();
    };
  }

  /** A static String field (e.g. okhttp3.OkHttp.VERSION). */
  static VersionProbe staticField(String className, String field) {
    return loader -> (String) Class.forName(className, true, loader).getField(field).get(null);
  }

  /** A key of a properties file the library ships, in any copy the loader sees (Netty has one per jar). */
  static VersionProbe resourceProperty(String path, String key) {
    return loader -> {
      ClassLoader l = loader != null ? loader : ClassLoader.getSystemClassLoader();
      java.util.Enumeration<java.net.URL> urls = l.getResources(path);
      while (urls.hasMoreElements()) {
        try (java.io.InputStream in = urls.nextElement().openStream()) {
          java.util.Properties p = new java.util.Properties();
          p.load(in);
          String v = p.getProperty(key);
          if (v != null) {
            return v;
          }
        }
      }
      return null;
    };
  }

  static final VersionProbe JDK = loader -> "JDK " + System.getProperty("java.version");
}
