package dev.weft.agent;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.concurrent.DefaultEventExecutorGroup;
import io.netty.util.concurrent.EventExecutorGroup;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/**
 * A plain Netty HTTP/1.1 server, written against the 4.1 API so that one
 * compiled copy runs on every Netty the agent supports (NettyServerTest
 * loads it next to each version). Where its handler runs is the mode:
 * on the event loop; on a DefaultEventExecutorGroup the pipeline names
 * (Netty's own offload); or on an application thread pool that answers
 * from there.
 */
public final class NettyServer implements AutoCloseable {
  private final EventLoopGroup boss = new NioEventLoopGroup(1);
  private final EventLoopGroup workers = new NioEventLoopGroup(2);
  private final EventExecutorGroup handlers = new DefaultEventExecutorGroup(2);
  private final ExecutorService pool = Executors.newFixedThreadPool(2);
  private final ChannelGroup connections = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
  private final Channel channel;

  /**
   * Listens on 127.0.0.1 (a free port). servedUnder gets each request's URI
   * and the slot its handler ran under; every answer names its URI in X-R.
   */
  public NettyServer(String mode, Map<String, Long> servedUnder) throws InterruptedException {
    BiConsumer<ChannelHandlerContext, FullHttpRequest> answer = (ctx, req) -> {
      String uri = req.uri();
      servedUnder.put(uri, Slots.now());
      FullHttpResponse resp = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK,
          Unpooled.copiedBuffer("ok", StandardCharsets.US_ASCII));
      resp.headers().set("X-R", uri);
      resp.headers().set("Content-Length", 2);
      ctx.writeAndFlush(resp);
    };
    SimpleChannelInboundHandler<FullHttpRequest> handler = new SimpleChannelInboundHandler<FullHttpRequest>() {
      @Override
      protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
        if (mode.equals("pool")) {
          req.retain();
          pool.execute(() -> {
            try {
              answer.accept(ctx, req);
            } finally {
              req.release();
            }
          });
        } else {
          answer.accept(ctx, req);
        }
      }

      // The end of the pipeline: passing these on would hop back to a loop that may be shutting down.
      @Override
      public void channelInactive(ChannelHandlerContext ctx) {}

      @Override
      public void channelUnregistered(ChannelHandlerContext ctx) {}

      @Override
      public boolean isSharable() {
        return true;
      }
    };
    channel = new ServerBootstrap().group(boss, workers).channel(NioServerSocketChannel.class)
        .childHandler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            connections.add(ch);
            ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(1 << 16));
            if (mode.equals("executor-group")) {
              ch.pipeline().addLast(handlers, handler);
            } else {
              ch.pipeline().addLast(handler);
            }
          }
        })
        .bind("127.0.0.1", 0).sync().channel();
  }

  public int port() {
    return ((InetSocketAddress) channel.localAddress()).getPort();
  }

  @Override
  public void close() {
    // All at once, each with a quiet period: a closing connection's last
    // events hop between the loop and the handlers' executor.
    channel.close().syncUninterruptibly();
    connections.close().syncUninterruptibly();
    List<Future<?>> down = new ArrayList<>();
    for (EventExecutorGroup g : new EventExecutorGroup[] {workers, boss, handlers}) {
      down.add(g.shutdownGracefully(100, 2000, TimeUnit.MILLISECONDS));
    }
    for (Future<?> f : down) {
      f.syncUninterruptibly();
    }
    pool.shutdownNow();
  }
}
