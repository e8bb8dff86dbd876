package dev.weft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;

/**
 * CoroutineTest again, on the oldest kotlinx.coroutines the agent supports
 * (1.7.3; the class path has the newest): the same compiled test, loaded
 * next to the older library, every one of its tests.
 */
class CoroutineFloorTest {
  @Test
  void coroutineTestPassesOnTheOldestSupportedVersion() throws Throwable {
    String version = "1.7.3";
    try (URLClassLoader loader = Isolated.childFirst("weft.test.coroutines", version,
        "kotlinx.coroutines.", CoroutineTest.class.getName())) {
      String from = loader.loadClass("kotlinx.coroutines.DispatchedTask")
          .getProtectionDomain().getCodeSource().getLocation().toString();
      assertTrue(from.contains(version), "kotlinx.coroutines loaded from " + from);
      Class<?> c = loader.loadClass(CoroutineTest.class.getName());
      assertTrue(c != CoroutineTest.class, "CoroutineTest was not loaded again");
      Object t = c.getConstructor().newInstance();
      int ran = 0;
      try {
        for (Method m : c.getDeclaredMethods()) {
          if (m.isAnnotationPresent(Test.class)) {
            m.setAccessible(true);
            try {
              m.invoke(t);
            } catch (InvocationTargetException e) {
              throw new AssertionError("CoroutineTest." + m.getName() + " on kotlinx.coroutines " + version, e.getCause());
            }
            ran++;
          }
        }
      } finally {
        c.getMethod("stop").invoke(t);
      }
      int declared = 0;
      for (Method m : CoroutineTest.class.getDeclaredMethods()) {
        declared += m.isAnnotationPresent(Test.class) ? 1 : 0;
      }
      assertEquals(declared, ran);
    }
  }
}
