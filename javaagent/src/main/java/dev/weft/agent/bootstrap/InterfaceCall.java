package dev.weft.agent.bootstrap;

import java.lang.reflect.Method;

/**
 * A no-argument method of a library's public interface, called on objects
 * the agent sees only as Object (its helpers are loaded by the bootstrap
 * loader, which cannot see the library). The method is looked up on the
 * interface, not on the object's class, which may not be public.
 */
final class InterfaceCall {
  private final String iface;
  private final String method;

  private final ClassValue<Method> methods = new ClassValue<Method>() {
    @Override
    protected Method computeValue(Class<?> type) {
      for (Class<?> c = type; c != null; c = c.getSuperclass()) {
        Method m = find(c);
        if (m != null) {
          return m;
        }
      }
      return null;
    }
  };

  InterfaceCall(String iface, String method) {
    this.iface = iface;
    this.method = method;
  }

  /** The method's result on target, or null when target does not implement the interface or the call fails. */
  Object call(Object target) {
    if (target == null) {
      return null;
    }
    Method m = methods.get(target.getClass());
    if (m == null) {
      return null;
    }
    try {
      return m.invoke(target);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  private Method find(Class<?> c) {
    for (Class<?> i : c.getInterfaces()) {
      if (i.getName().equals(iface)) {
        try {
          return i.getMethod(method);
        } catch (NoSuchMethodException e) {
          return null;
        }
      }
      Method m = find(i);
      if (m != null) {
        return m;
      }
    }
    return null;
  }
}
