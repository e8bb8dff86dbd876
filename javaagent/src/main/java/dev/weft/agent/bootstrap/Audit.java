package dev.weft.agent.bootstrap;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
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
    /** A write's first bytes (up to 64, as ASCII) when it wrote from one buffer, else "". */
    public final String head;

    Record(boolean write, int localPort, int remotePort, long slot, String thread, String head) {
      this.write = write;
      this.localPort = localPort;
      this.remotePort = remotePort;
      this.slot = slot;
      this.thread = thread;
      this.head = head;
    }

    @Override
    public String toString() {
      return (write ? "write " : "read  ") + localPort + "->" + remotePort + " slot=" + slot + " on " + thread
          + (head.isEmpty() ? "" : " " + head.split("\r\n", 2)[0]);
    }
  }

  /** A read or write of bytes through channel; src is the write's buffer (or buffers). */
  public static void io(Object channel, boolean write, long bytes, Object src) {
    if (bytes <= 0 || !(channel instanceof SocketChannel)) {
      return;
    }
    SocketChannel ch = (SocketChannel) channel;
    try {
      Record r = new Record(write, port(ch.getLocalAddress()), port(ch.getRemoteAddress()),
          WeftNative.currentSlot(), Thread.currentThread().getName(), head(src, bytes));
      synchronized (RECORDS) {
        if (RECORDS.size() < MAX) {
          RECORDS.add(r);
        }
      }
    } catch (Exception ignored) {
      // a closed channel: nothing the kernel would see either
    }
  }

  /** The bytes a write just took from a single buffer (its position moved past them). */
  private static String head(Object src, long bytes) {
    if (!(src instanceof ByteBuffer)) {
      return "";
    }
    ByteBuffer b = ((ByteBuffer) src).duplicate();
    int end = b.position();
    int start = (int) Math.max(0, end - bytes);
    byte[] out = new byte[Math.min(64, end - start)];
    b.position(start);
    b.get(out);
    return new String(out, StandardCharsets.US_ASCII);
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
