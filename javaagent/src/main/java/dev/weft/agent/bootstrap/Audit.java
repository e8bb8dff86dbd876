package dev.weft.agent.bootstrap;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;

/**
 * Test aid (-Dweft.agent.audit=true): records what the kernel would read from
 * the slot at each NIO socket read and write, so tests can check the keys
 * without BPF. Bounded; never enabled in production.
 */
public final class Audit {
  private Audit() {}

  private static final int MAX = 100_000;
  private static final List<Record> RECORDS = new ArrayList<>();

  /** One socket call that moved bytes. */
  public static final class Record {
    public final boolean write;
    public final int localPort;
    public final int remotePort;
    public final long slot;
    public final String thread;

    Record(boolean write, int localPort, int remotePort, long slot, String thread) {
      this.write = write;
      this.localPort = localPort;
      this.remotePort = remotePort;
      this.slot = slot;
      this.thread = thread;
    }

    @Override
    public String toString() {
      return (write ? "write " : "read  ") + localPort + "->" + remotePort + " slot=" + slot + " on " + thread;
    }
  }

  public static void io(Object channel, boolean write, long bytes) {
    if (bytes <= 0 || !(channel instanceof SocketChannel)) {
      return;
    }
    SocketChannel ch = (SocketChannel) channel;
    try {
      Record r = new Record(write, port(ch.getLocalAddress()), port(ch.getRemoteAddress()),
          WeftNative.currentSlot(), Thread.currentThread().getName());
      synchronized (RECORDS) {
        if (RECORDS.size() < MAX) {
          RECORDS.add(r);
        }
      }
    } catch (Exception ignored) {
      // a closed channel: nothing the kernel would see either
    }
  }

  private static int port(SocketAddress a) {
    return a instanceof InetSocketAddress ? ((InetSocketAddress) a).getPort() : -1;
  }

  public static List<Record> snapshot() {
    synchronized (RECORDS) {
      return new ArrayList<>(RECORDS);
    }
  }

  public static void clear() {
    synchronized (RECORDS) {
      RECORDS.clear();
    }
  }
}
