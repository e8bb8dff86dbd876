package dev.weft.agent;

import java.util.HashMap;
import java.util.Map;

/** The agent argument string: comma-separated key=value. */
public final class AgentArgs {
  public final boolean ioctl;
  public final boolean debug;
  public final boolean count;
  public final boolean audit;
  /** Seconds between asking every thread to register its slot again; 0 = never. */
  public final int refreshSeconds;

  private AgentArgs(Map<String, String> m) {
    String mode = m.getOrDefault("mode", "slot");
    if (!mode.equals("slot") && !mode.equals("ioctl")) {
      throw new IllegalArgumentException("mode must be slot or ioctl, not " + mode);
    }
    ioctl = mode.equals("ioctl");
    debug = flag(m, "debug", "weft.agent.debug");
    count = flag(m, "count", "weft.agent.count");
    audit = flag(m, "audit", "weft.agent.audit");
    refreshSeconds = Integer.parseInt(m.getOrDefault("refresh", "2"));
  }

  private static boolean flag(Map<String, String> m, String key, String property) {
    return Boolean.parseBoolean(m.getOrDefault(key, System.getProperty(property, "false")));
  }

  public static AgentArgs parse(String args) {
    Map<String, String> m = new HashMap<>();
    if (args != null) {
      for (String part : args.split(",")) {
        String p = part.trim();
        if (p.isEmpty()) {
          continue;
        }
        int eq = p.indexOf('=');
        if (eq <= 0) {
          throw new IllegalArgumentException("agent argument is not key=value: " + p);
        }
        m.put(p.substring(0, eq).trim(), p.substring(eq + 1).trim());
      }
    }
    return new AgentArgs(m);
  }

  public String mode() {
    return ioctl ? "ioctl" : "slot";
  }
}
