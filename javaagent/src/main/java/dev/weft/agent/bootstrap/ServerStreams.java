package dev.weft.agent.bootstrap;

import java.lang.reflect.Method;

/**
 * Ktor's CIO server. Each connection has a reader coroutine that reads the
 * socket ahead into a byte channel (the connection's input), and a pipeline
 * coroutine that parses requests out of that channel and launches a handler
 * coroutine per request. The socket read and the handler run on different
 * threads at different times, so the request's id is kept on the input
 * channel in between: a read from a socket the server accepted is done under
 * the channel's pending id (a fresh one when none is pending), and the
 * handler takes that id when it starts, right after its request head was
 * parsed. Every read until then (a head in several pieces, a body read
 * before the handler starts) stays under the same id; the next request's
 * bytes cannot arrive before this request is answered, so they find no id
 * pending and get a fresh one. Requests pipelined in one read share an id.
 */
public final class ServerStreams {
  private ServerStreams() {}

  /**
   * Sockets a Ktor server socket accepted, and input channels of server
   * connections that were accepted before the agent attached (known from
   * their first handler on): a set, the value is unused.
   */
  private static final IdTable SERVER = new IdTable(1 << 16);
  /** Input channel of a server connection -> id of the request being read into it. */
  private static final IdTable PENDING = new IdTable(1 << 16);

  /**
   * Whether this JVM runs a CIO server at all. The reader hook also runs for
   * every read of Ktor's CIO client; an application with another server
   * engine (Netty) skips the look-ups, which cost it measurably (hashing
   * the client's channels by identity on each read).
   */
  private static volatile boolean cioServer;
  /**
   * Whether an input channel was marked as a server's (a connection from
   * before the agent attached): only then are channels looked up too.
   */
  private static volatile boolean markedInputs;

  /** A Ktor server socket accepted socket (before its reader exists). */
  public static void accepted(Object socket) {
    cioServer = true;
    SERVER.put(socket, 1);
  }

  /**
   * Before the reader reads socket into channel: mounts the channel's pending
   * id, or a fresh one, if socket is a server's; returns the id to restore.
   */
  public static long beforeRead(Object channel, Object socket) {
    if (!cioServer || channel == null || socket == null
        || (SERVER.get(socket) == 0 && (!markedInputs || SERVER.get(channel) == 0))) {
      return Context.current();
    }
    // Only this connection's reader creates its id, one read at a time.
    long id = PENDING.get(channel);
    if (id == 0) {
      id = Ids.next();
      PENDING.put(channel, id);
    }
    return Context.swap(id);
  }

  /**
   * Runs every path once for the installer's warm-up, before any hook is
   * in place, and leaves nothing behind: the flags say no CIO server yet.
   */
  public static void warmUp(Object probe) {
    accepted(probe);
    Context.restore(beforeRead(probe, probe));
    Context.restore(requestStarted(probe));
    SERVER.take(probe);
    PENDING.take(probe);
    cioServer = false;
    markedInputs = false;
  }

  private static volatile Method getInput;

  /**
   * A request's handler coroutine takes its first step (on the pipeline's
   * thread): it runs under the id its request was read under, and so does
   * every task it creates or dispatches. Returns the id to restore after
   * the step. With none pending it runs under the pipeline's own id,
   * normally none: the second of two requests pipelined in one read, or a
   * connection accepted before the agent attached, whose later requests are
   * then covered.
   */
  public static long requestStarted(Object connection) {
    Object input = input(connection);
    if (input == null) {
      return Context.current();
    }
    cioServer = true;
    long id = PENDING.take(input);
    if (id == 0) {
      markedInputs = true;
      SERVER.put(input, 1);
      return Context.current();
    }
    return Context.swap(id);
  }

  /** ServerIncomingConnection.input (a public getter of a public class). */
  private static Object input(Object connection) {
    if (connection == null) {
      return null;
    }
    Class<?> c = connection.getClass();
    try {
      Method m = getInput;
      if (m == null || m.getDeclaringClass() != c) {
        m = c.getMethod("getInput");
        getInput = m;
      }
      return m.invoke(connection);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }
}
