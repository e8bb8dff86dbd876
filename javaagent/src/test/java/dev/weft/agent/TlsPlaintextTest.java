package dev.weft.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.weft.agent.bootstrap.Tls;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * What the TLS advice hands the kernel side: the plaintext a wrap consumed
 * or an unwrap produced, across buffers, from their positions at entry;
 * and a record's first bytes only where a record begins.
 */
class TlsPlaintextTest {
  @Test
  void gathersWhatEachBufferMovedInOrder() {
    ByteBuffer head = ByteBuffer.wrap("xxGET /1 HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII));
    ByteBuffer rest = ByteBuffer.allocateDirect(32).put("Host: a\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    rest.flip();
    ByteBuffer[] srcs = {ByteBuffer.allocate(1), head, rest};
    head.position(2);
    int[] entry = Tls.wrapEntry(srcs, 1, 2, ByteBuffer.allocate(8)); // dst position, then srcs[1..2]
    head.position(head.limit()); // the wrap consumed both buffers
    rest.position(rest.limit());
    byte[] got = Tls.gather(srcs, 1, entry, 1, 28);
    assertEquals("GET /1 HTTP/1.1\r\nHost: a\r\n\r\n", new String(got, StandardCharsets.US_ASCII));
    assertEquals(head.limit(), head.position(), "the buffers' positions are left alone");
  }

  @Test
  void findsTheOnlyBufferThatMoved() {
    ByteBuffer a = ByteBuffer.allocate(16);
    ByteBuffer b = ByteBuffer.allocate(16);
    ByteBuffer[] bufs = {ByteBuffer.allocate(1), a, b};
    int[] pos = Tls.wrapEntry(bufs, 1, 2, ByteBuffer.allocate(8)); // dst, then a and b
    assertEquals(-1, Tls.soleMoved(bufs, 1, pos, 1), "nothing moved");
    b.position(5);
    assertEquals(2, Tls.soleMoved(bufs, 1, pos, 1), "b alone: its index in pos");
    a.position(3);
    assertEquals(-1, Tls.soleMoved(bufs, 1, pos, 1), "both moved: a copy gathers them");
  }

  @Test
  void copiesAtMostWhatTheKernelSideReads() {
    ByteBuffer big = ByteBuffer.allocate(10000);
    int[] pos = Tls.positions(new ByteBuffer[] {big}, 0, 1, 0);
    big.position(10000);
    assertEquals(4096, Tls.gather(new ByteBuffer[] {big}, 0, pos, 0, 10000).length);
  }

  @Test
  void fingerprintsOnlyRecordStarts() {
    byte[] rec = new byte[40];
    rec[0] = 23;
    rec[1] = 3;
    rec[2] = 3;
    for (int i = 3; i < rec.length; i++) {
      rec[i] = (byte) i;
    }
    ByteBuffer b = ByteBuffer.allocate(64);
    b.position(10);
    b.put(rec);
    byte[] fp = Tls.recordStart(b, 10, 40);
    byte[] want = new byte[24];
    System.arraycopy(rec, 0, want, 0, 24);
    assertArrayEquals(want, fp);
    assertNull(Tls.recordStart(b, 10, 23), "fewer bytes than a fingerprint");
    assertNull(Tls.recordStart(b, 11, 30), "not a record header");
    assertNull(Tls.recordStart(ByteBuffer.wrap("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n".getBytes(StandardCharsets.US_ASCII)), 0, 36));
  }

  @Test
  void fingerprintsTheFirstSourceWithBytesLeft() {
    byte[] rec = new byte[30];
    rec[0] = 23;
    rec[1] = 3;
    rec[2] = 3;
    for (int i = 3; i < rec.length; i++) {
      rec[i] = (byte) (i * 7);
    }
    ByteBuffer spent = ByteBuffer.allocate(8);
    spent.position(8); // consumed by an earlier unwrap
    ByteBuffer records = ByteBuffer.allocateDirect(64);
    records.put(new byte[5]).put(rec).flip().position(5);
    ByteBuffer[] srcs = {ByteBuffer.wrap(new byte[] {1}), spent, records};
    byte[] want = new byte[24];
    System.arraycopy(rec, 0, want, 0, 24);
    assertArrayEquals(want, Tls.firstRecordStart(srcs, 1, 2));
    assertNull(Tls.firstRecordStart(srcs, 0, 3), "the first source with bytes left is not a record");
    assertNull(Tls.firstRecordStart(srcs, 1, 1), "no bytes left");
  }
}
