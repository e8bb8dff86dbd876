package dev.weft.agent

import dev.weft.agent.bootstrap.Audit
import dev.weft.agent.bootstrap.Context
import dev.weft.agent.bootstrap.Kernel
import dev.weft.agent.bootstrap.ServerStreams
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
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import java.io.BufferedInputStream
import java.net.Socket

/**
 * The demo frontend's path, in one JVM: Ktor server (Netty, or CIO) -> Ktor
 * CIO client -> Ktor backend. Audit records the slot at every NIO socket call,
 * which is what the kernel would read: the frontend's read of a request and
 * its client write to the backend must carry one id, and so must its response
 * on Netty (see checkOne).
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

    /** A keep-alive connection: one request at a time, each answer read by its Content-Length. */
    private class KeepAlive(port: Int) : AutoCloseable {
        private val socket = Socket("127.0.0.1", port)
        private val input = BufferedInputStream(socket.getInputStream())

        fun get(path: String): String {
            socket.getOutputStream().write("GET $path HTTP/1.1\r\nHost: x\r\n\r\n".toByteArray())
            val head = StringBuilder()
            while (!head.endsWith("\r\n\r\n")) {
                val b = input.read()
                check(b >= 0) { "connection closed after: $head" }
                head.append(b.toChar())
            }
            val length = Regex("(?i)content-length: *(\\d+)").find(head)?.groupValues?.get(1)?.toInt()
                ?: error("no Content-Length in: $head")
            return input.readNBytes(length).decodeToString()
        }

        override fun close() = socket.close()
    }

    /**
     * One request through the frontend; checks the keys the kernel would have
     * seen and returns the request's id. [responseUnderId]: the response write
     * carries it too (Netty); CIO's connection writer answers under no id,
     * which the kernel pairs by socket, but never under another request's.
     */
    private fun checkOne(
        frontPort: Int,
        path: String,
        expected: String,
        responseUnderId: Boolean = true,
        send: () -> String = { get(frontPort, path) },
    ): Long {
        Audit.clear()
        assertEquals(expected, send())
        Thread.sleep(20) // the backend's and frontend's last socket calls
        val records = Audit.snapshot()
        val frontReads = records.filter { !it.write && it.localPort == frontPort }
        val frontWrites = records.filter { it.write && it.localPort == frontPort }
        val toBackend = records.filter { it.write && it.remotePort == backendPort }
        val backendSide = records.filter { it.localPort == backendPort }
        val dump = records.joinToString("\n")
        assertTrue(frontReads.isNotEmpty() && toBackend.isNotEmpty() && frontWrites.isNotEmpty(), dump)
        val id = frontReads.first().slot
        assertNotEquals(0L, id, "the request read must be under a logical id:\n$dump")
        for (r in frontReads + toBackend) assertEquals(id, r.slot, "$r\n$dump")
        for (r in frontWrites) assertTrue(r.slot == id || (!responseUnderId && r.slot == 0L), "$r\n$dump")
        // The backend is a server of its own: a different request, a different id.
        for (r in backendSide) assertTrue(r.slot != 0L && r.slot != id, "$r\n$dump")
        // Reading the backend's answer is the selector's business (or the reader's): not checked.
        return id
    }

    /** Requests one after another on one connection: each is read under an id of its own. */
    private fun checkKeepAlive(frontPort: Int, path: String, expected: String, responseUnderId: Boolean) {
        KeepAlive(frontPort).use { c ->
            val ids = (1..10).map { checkOne(frontPort, path, expected, responseUnderId) { c.get(path) } }
            assertEquals(ids.size, ids.toSet().size, "ids per request on one connection: $ids")
        }
    }

    @Test
    fun nettyFrontendChain() {
        repeat(10) { checkOne(nettyPort, "/chain", "front+work") }
    }

    @Test
    fun nettyFrontendKeepAlive() {
        checkKeepAlive(nettyPort, "/chain", "front+work", responseUnderId = true)
    }

    @Test
    fun nettyFrontendSharedWorker() {
        repeat(10) { checkOne(nettyPort, "/shared", "shared+work") }
    }

    @Test
    fun cioFrontendChain() {
        repeat(10) { checkOne(cioPort, "/chain", "front+work", responseUnderId = false) }
    }

    @Test
    fun cioFrontendKeepAlive() {
        checkKeepAlive(cioPort, "/chain", "front+work", responseUnderId = false)
    }

    @Test
    fun cioFrontendSharedWorker() {
        repeat(10) { checkOne(cioPort, "/shared", "shared+work", responseUnderId = false) }
    }

    /** Stands in for a CIO ServerIncomingConnection: the agent reads its input through getInput(). */
    class FakeConnection(val input: Any)

    /**
     * A CIO connection accepted before the agent attached is not known as a
     * server's: its reads stay as they are until its first handler names its
     * input channel; from the next request on, reads get an id and the
     * handler takes it.
     */
    @Test
    fun cioConnectionAcceptedBeforeAttach() {
        val socket = Any()
        val input = Any()
        val connection = FakeConnection(input)
        Slots.under(0) {
            var prev = ServerStreams.beforeRead(input, socket)
            assertEquals(0L, Slots.now(), "a read from an unknown socket")
            Context.restore(prev)
            prev = ServerStreams.requestStarted(connection)
            assertEquals(0L, Slots.now(), "a handler with no id pending")
            Context.restore(prev)

            prev = ServerStreams.beforeRead(input, socket)
            val id = Slots.now()
            assertNotEquals(0L, id, "the next request's read")
            Context.restore(prev)
            prev = ServerStreams.requestStarted(connection)
            assertEquals(id, Slots.now(), "the next request's handler")
            Context.restore(prev)
            assertEquals(0L, Slots.now())
        }
    }

    /** What a request costs: native calls (slot writes) and syscalls (packets), per frontend engine. */
    @Test
    fun costPerRequest() {
        for ((engine, port) in listOf("Netty" to nettyPort, "CIO" to cioPort)) {
            repeat(20) { get(port, "/chain") } // warm: threads, connections, JIT
            Thread.sleep(50)
            val w0 = Kernel.writes()
            val p0 = WeftNative.packets()
            val n = 200
            repeat(n) { get(port, "/chain") }
            Thread.sleep(50)
            val writes = (Kernel.writes() - w0).toDouble() / n
            val packets = (WeftNative.packets() - p0).toDouble() / n
            // Frontend and backend both run here: the figures cover both servers.
            println("weft-agent cost per /chain request ($engine frontend + Netty backend in one JVM): " +
                "%.1f slot writes (JNI calls), %.2f ioctl syscalls".format(writes, packets))
            assertTrue(packets <= 2.0, "$engine: syscalls per request: $packets")
        }
    }
}
