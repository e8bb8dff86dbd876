// frontend: Ktor server (Netty, or CIO with FRONTEND_ENGINE=cio) that calls the
// backend with Ktor's CIO client. Each route hands the request's work across
// coroutines in a different way, so a tracer can be checked against each: same
// coroutine, dispatcher switch, concurrent children, and a long-lived worker fed
// through a channel.
package weft.demo.frontend

import io.ktor.client.HttpClient
import io.ktor.client.engine.cio.CIO
import io.ktor.client.plugins.HttpTimeout
import io.ktor.client.request.get
import io.ktor.client.statement.bodyAsText
import io.ktor.http.HttpStatusCode
import io.ktor.server.application.Application
import io.ktor.server.application.ApplicationCallPipeline
import io.ktor.server.application.ApplicationStopPreparing
import io.ktor.server.application.ApplicationStopped
import io.ktor.server.cio.CIO as ServerCIO
import io.ktor.server.engine.ApplicationEngine
import io.ktor.server.engine.ApplicationEngineFactory
import io.ktor.server.engine.EmbeddedServer
import io.ktor.server.engine.connector
import io.ktor.server.engine.embeddedServer
import io.ktor.server.netty.Netty
import io.ktor.server.response.respondText
import io.ktor.server.routing.RoutingContext
import io.ktor.server.routing.get
import io.ktor.server.routing.routing
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.delay
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import java.util.concurrent.CountDownLatch
import java.util.concurrent.atomic.AtomicInteger

private fun env(name: String, default: String): String =
    System.getenv(name)?.takeIf { it.isNotBlank() } ?: default

private class BackendError(message: String) : Exception(message)

/** The backend and the one client every route shares. */
class Backend(baseUrl: String) {
    private val workUrl = baseUrl.trimEnd('/') + "/work"

    val client = HttpClient(CIO) {
        // Bounded, so a stuck backend turns into a 502 instead of a hung request.
        install(HttpTimeout) {
            connectTimeoutMillis = 2_000
            requestTimeoutMillis = 10_000
        }
    }

    suspend fun work(): String {
        val response = client.get(workUrl)
        val body = response.bodyAsText()
        if (response.status != HttpStatusCode.OK) {
            throw BackendError("backend answered ${response.status.value}")
        }
        return body
    }
}

/** One unit of work for the shared worker; the handler waits on [reply]. */
class Job(val reply: CompletableDeferred<String> = CompletableDeferred())

/**
 * Burns CPU for about [millis] of wall-clock time. The name is distinctive on
 * purpose: profiles must show it under the request that ran it. Returns a value
 * the caller puts in the response, so the JIT cannot drop the loop.
 */
fun burnCpuFrontendHotLoop(millis: Long): Long {
    val deadline = System.nanoTime() + millis * 1_000_000
    var h = -0x340d631b7bdddcdbL // FNV-1a offset basis; the mixing is cheap and not foldable.
    var i = 0L
    while (System.nanoTime() < deadline) {
        repeat(10_000) {
            h = (h xor i) * 0x100000001b3L
            h = h xor (h ushr 29)
            i++
        }
    }
    return h
}

/** Runs [block] and answers with its text, or 502 when the backend could not be used. */
private suspend fun RoutingContext.viaBackend(block: suspend () -> String) {
    val text = try {
        block()
    } catch (e: Exception) {
        // A cancelled request must stay cancelled, not be answered.
        currentCoroutineContext().ensureActive()
        call.respondText(
            "bad gateway: ${e.message ?: e.javaClass.simpleName}\n",
            status = HttpStatusCode.BadGateway,
        )
        return
    }
    call.respondText(text + "\n")
}

/**
 * The engine closes open connections as soon as Ktor stops it, which would drop the
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

fun Application.frontendRoutes(backend: Backend) {
    drainOnStop(limitMillis = 3_000)
    // The shared worker: started once with the application, not per request, so
    // the backend call runs in a coroutine that no request started.
    val jobs = Channel<Job>()
    launch {
        for (job in jobs) {
            try {
                job.reply.complete(backend.work())
            } catch (e: Exception) {
                currentCoroutineContext().ensureActive()
                job.reply.completeExceptionally(e)
            }
        }
    }
    monitor.subscribe(ApplicationStopped) {
        jobs.close()
        backend.client.close()
    }

    routing {
        get("/direct") {
            viaBackend { "frontend direct: " + backend.work() }
        }
        get("/hop") {
            viaBackend {
                delay(10)
                val body = withContext(Dispatchers.IO) { backend.work() }
                "frontend hop: $body"
            }
        }
        get("/parallel") {
            viaBackend {
                val bodies = coroutineScope {
                    awaitAll(async { backend.work() }, async { backend.work() })
                }
                "frontend parallel: " + bodies.joinToString(" | ")
            }
        }
        get("/shared") {
            viaBackend {
                val job = Job()
                jobs.send(job)
                "frontend shared: " + job.reply.await()
            }
        }
        get("/cpu") {
            viaBackend {
                // On the request's own thread, so its CPU samples belong to this request.
                val sum = burnCpuFrontendHotLoop(200)
                val body = backend.work()
                "frontend cpu: checksum=${java.lang.Long.toHexString(sum)} $body"
            }
        }
        get("/health") { call.respondText("ok") }
    }
}

/** The server on [factory]: the same routes and stop bounds for every engine. */
private fun <E : ApplicationEngine, C : ApplicationEngine.Configuration> server(
    factory: ApplicationEngineFactory<E, C>,
    bind: String,
    port: Int,
    backend: Backend,
): EmbeddedServer<E, C> = embeddedServer(factory, configure = {
    connector {
        host = bind
        this.port = port
    }
    // Ktor's own SIGTERM hook stops the server with these bounds.
    shutdownGracePeriod = 200
    shutdownTimeout = 3000
}) { frontendRoutes(backend) }

fun main() {
    val bind = env("BIND", "127.0.0.1")
    val port = env("PORT", "8080").toInt()
    val backendUrl = env("BACKEND_URL", "http://127.0.0.1:8082")
    // Both of Ktor's JVM server engines: they read requests in different ways
    // (Netty's event loop, CIO's reader and pipeline coroutines).
    val engine = env("FRONTEND_ENGINE", "netty")
    val backend = Backend(backendUrl)
    val server: EmbeddedServer<*, *> = when (engine) {
        "netty" -> server(Netty, bind, port, backend)
        "cio" -> server(ServerCIO, bind, port, backend)
        else -> {
            System.err.println("frontend: FRONTEND_ENGINE must be netty or cio, not $engine")
            kotlin.system.exitProcess(2)
        }
    }
    val stopped = CountDownLatch(1)
    server.monitor.subscribe(ApplicationStopped) { stopped.countDown() }
    server.start(wait = false)
    // Report the bound port, which differs from PORT when PORT=0.
    val bound = runBlocking { server.engine.resolvedConnectors().first().port }
    println("frontend: listening on http://$bind:$bound ($engine), backend $backendUrl")
    // Ktor's threads are daemons: main must stay until the server has stopped.
    stopped.await()
}
