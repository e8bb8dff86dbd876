// backend: the leaf service the fronts call. Ktor server on Netty.
package weft.demo.backend

import io.ktor.server.application.Application
import io.ktor.server.application.ApplicationCallPipeline
import io.ktor.server.application.ApplicationStopPreparing
import io.ktor.server.application.ApplicationStopped
import io.ktor.server.engine.connector
import io.ktor.server.engine.embeddedServer
import io.ktor.server.netty.Netty
import io.ktor.server.response.respondText
import io.ktor.server.routing.get
import io.ktor.server.routing.routing
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import java.util.concurrent.CountDownLatch
import java.util.concurrent.atomic.AtomicInteger

private fun env(name: String, default: String): String =
    System.getenv(name)?.takeIf { it.isNotBlank() } ?: default

/**
 * Netty closes open connections as soon as Ktor stops it, which would drop the
 * requests in progress at SIGTERM. So count them, and hold the stop (Ktor raises
 * ApplicationStopPreparing before it closes anything) until they are answered,
 * for at most [limitMillis].
 */
private fun Application.drainOnStop(limitMillis: Long) {
    val inFlight = AtomicInteger()
    intercept(ApplicationCallPipeline.Setup) {
        inFlight.incrementAndGet()
        try {
            proceed()
        } finally {
            inFlight.decrementAndGet()
        }
    }
    monitor.subscribe(ApplicationStopPreparing) {
        // A request already read from its socket may not have reached the pipeline yet.
        Thread.sleep(100)
        val deadline = System.nanoTime() + limitMillis * 1_000_000
        while (inFlight.get() > 0 && System.nanoTime() < deadline) Thread.sleep(5)
    }
}

fun Application.backendRoutes() {
    drainOnStop(limitMillis = 3_000)
    routing {
        // /work and /work/<anything> (the test apps put the request number there).
        get("/work/{rest...}") {
            // Suspends rather than blocks, so the request leaves its thread and comes back.
            delay(20)
            call.respondText("work done")
        }
        get("/health") { call.respondText("ok") }
    }
}

fun main() {
    val bind = env("BIND", "127.0.0.1")
    val port = env("PORT", "8082").toInt()
    val server = embeddedServer(Netty, configure = {
        connector {
            host = bind
            this.port = port
        }
        // Ktor's own SIGTERM hook stops the server with these bounds.
        shutdownGracePeriod = 200
        shutdownTimeout = 3000
    }) { backendRoutes() }
    val stopped = CountDownLatch(1)
    server.monitor.subscribe(ApplicationStopped) { stopped.countDown() }
    server.start(wait = false)
    // Report the bound port, which differs from PORT when PORT=0.
    val bound = runBlocking { server.engine.resolvedConnectors().first().port }
    println("backend: listening on http://$bind:$bound")
    // Ktor's threads are daemons: main must stay until the server has stopped.
    stopped.await()
}
