package dev.weft.agent

import dev.weft.agent.bootstrap.Audit
import dev.weft.agent.bootstrap.Kernel
import dev.weft.agent.bootstrap.WeftNative
import io.ktor.client.HttpClient
import io.ktor.client.engine.cio.CIO as ClientCIO
import io.ktor.client.request.get
import io.ktor.client.statement.bodyAsText
import io.ktor.server.application.Application
import io.ktor.server.engine.EmbeddedServer
import io.ktor.server.engine.connector
import io.ktor.server.engine.embeddedServer
import io.ktor.server.netty.Netty
import io.ktor.server.cio.CIO as ServerCIO
import io.ktor.server.response.respondText
import io.ktor.server.routing.get
import io.ktor.server.routing.routing
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.Disabled
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import java.net.Socket

/**
 * The demo frontend's path, in one JVM: Ktor server (Netty, or CIO) -> Ktor
 * CIO client -> Ktor backend. Audit records the slot at every NIO socket call,
 * which is what the kernel would read: the frontend's read of a request, its
 * client write to the backend and its response must all carry one id.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class KtorPathTest {
    private lateinit var backend: EmbeddedServer<*, *>
    private lateinit var netty: EmbeddedServer<*, *>
    private lateinit var cio: EmbeddedServer<*, *>
    private var backendPort = 0
    private var nettyPort = 0
    private var cioPort = 0
    private val client = HttpClient(ClientCIO)

    class Job(val reply: CompletableDeferred<String>)

    private val jobs = Channel<Job>()
    private val workerScope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

    private fun Application.frontendRoutes() {
        routing {
            get("/chain") {
                val answer = client.get("http://127.0.0.1:$backendPort/work").bodyAsText()
                call.respondText("front+$answer")
            }
            get("/shared") {
                val reply = CompletableDeferred<String>()
                jobs.send(Job(reply))
                call.respondText("shared+" + reply.await())
            }
        }
    }

    private fun port(server: EmbeddedServer<*, *>) =
        runBlocking { server.engine.resolvedConnectors().first().port }

    @BeforeAll
    fun start() {
        backend = embeddedServer(Netty, configure = { connector { host = "127.0.0.1"; port = 0 } }) {
            routing {
                get("/work") {
                    delay(5)
                    call.respondText("work")
                }
            }
        }.start(wait = false)
        backendPort = port(backend)
        netty = embeddedServer(Netty, configure = { connector { host = "127.0.0.1"; port = 0 } }) {
            frontendRoutes()
        }.start(wait = false)
        nettyPort = port(netty)
        cio = embeddedServer(ServerCIO, configure = { connector { host = "127.0.0.1"; port = 0 } }) {
            frontendRoutes()
        }.start(wait = false)
        cioPort = port(cio)
        // The shared worker: launched once, with no request of its own.
        Slots.under(0) {
            workerScope.launch {
                for (job in jobs) {
                    val answer = client.get("http://127.0.0.1:$backendPort/work").bodyAsText()
                    job.reply.complete(answer)
                }
            }
        }
    }

    @AfterAll
    fun stop() {
        jobs.close()
        client.close()
        netty.stop(0, 0)
        cio.stop(0, 0)
        backend.stop(0, 0)
    }

    private fun get(port: Int, path: String): String =
        Socket("127.0.0.1", port).use { s ->
            s.getOutputStream().write("GET $path HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".toByteArray())
            val all = s.getInputStream().readBytes().decodeToString()
            all.substringAfter("\r\n\r\n")
        }

    /** One request through the frontend; checks the keys the kernel would have seen. */
    private fun checkOne(frontPort: Int, path: String, expected: String) {
        Audit.clear()
        assertEquals(expected, get(frontPort, path))
        Thread.sleep(20) // the backend's and frontend's last socket calls
        val records = Audit.snapshot()
        val frontReads = records.filter { !it.write && it.localPort == frontPort }
        val frontWrites = records.filter { it.write && it.localPort == frontPort }
        val toBackend = records.filter { it.write && it.remotePort == backendPort }
        val fromBackend = records.filter { !it.write && it.remotePort == backendPort }
        val backendSide = records.filter { it.localPort == backendPort }
        val dump = records.joinToString("\n")
        assertTrue(frontReads.isNotEmpty() && toBackend.isNotEmpty() && frontWrites.isNotEmpty(), dump)
        val id = frontReads.first().slot
        assertNotEquals(0L, id, "the request read must be under a logical id:\n$dump")
        for (r in frontReads + toBackend + frontWrites) assertEquals(id, r.slot, "$r\n$dump")
        // The backend is a server of its own: a different request, a different id.
        for (r in backendSide) assertTrue(r.slot != 0L && r.slot != id, "$r\n$dump")
        // Reading the backend's answer is the selector's business (or the reader's): not checked.
        fromBackend.size
    }

    @Test
    fun nettyFrontendChain() {
        repeat(10) { checkOne(nettyPort, "/chain", "front+work") }
    }

    @Test
    fun nettyFrontendSharedWorker() {
        repeat(10) { checkOne(nettyPort, "/shared", "shared+work") }
    }

    @Disabled("known gap: the CIO server's request read is not yet under a logical id (the reader-to-pipeline hand-off hooks do not fire as intended)")
    @Test
    fun cioFrontendChain() {
        repeat(10) { checkOne(cioPort, "/chain", "front+work") }
    }

    /** What a request costs: native calls (slot writes) and syscalls (packets), on the Netty frontend path. */
    @Test
    fun costPerRequest() {
        repeat(20) { get(nettyPort, "/chain") } // warm: threads, connections, JIT
        Thread.sleep(50)
        val w0 = Kernel.writes()
        val p0 = WeftNative.packets()
        val n = 200
        repeat(n) { get(nettyPort, "/chain") }
        Thread.sleep(50)
        val writes = (Kernel.writes() - w0).toDouble() / n
        val packets = (WeftNative.packets() - p0).toDouble() / n
        // Frontend and backend both run here: the figures cover both servers.
        println("weft-agent cost per /chain request (frontend + backend in one JVM): " +
            "%.1f slot writes (JNI calls), %.2f ioctl syscalls".format(writes, packets))
        assertTrue(packets <= 2.0, "syscalls per request: $packets")
    }
}
