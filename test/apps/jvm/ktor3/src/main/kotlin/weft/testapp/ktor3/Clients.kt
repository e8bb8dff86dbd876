// ktor3: a Ktor 3 server (Netty) whose routes call the backend through each
// JVM HTTP client, so the agent's parent for every client can be checked.
// GET /{client}/{n} waits 0-10 ms, then calls BACKEND_URL/work/{n}/{client};
// GET /fan/{n} calls three clients at once (/work/{n}/fan-{client}). The
// request number n in both paths makes a span under the wrong request visible.
package weft.testapp.ktor3

import io.ktor.client.HttpClient
import io.ktor.client.engine.cio.CIO
import io.ktor.client.engine.okhttp.OkHttp
import io.ktor.client.request.get
import io.ktor.client.statement.bodyAsText
import io.ktor.http.HttpStatusCode
import io.ktor.server.engine.embeddedServer
import io.ktor.server.netty.Netty
import io.ktor.server.response.respondText
import io.ktor.server.routing.get
import io.ktor.server.routing.routing
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.future.await
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlinx.coroutines.withContext
import okhttp3.Call
import okhttp3.Callback
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.Response
import java.io.IOException
import java.net.HttpURLConnection
import java.net.URI
import java.net.http.HttpResponse
import kotlin.coroutines.resume
import kotlin.coroutines.resumeWithException
import kotlin.random.Random

private fun env(name: String, default: String): String =
    System.getenv(name)?.takeIf { it.isNotBlank() } ?: default

class BackendError(message: String) : Exception(message)

/** Each client, by the name its route uses; every one fetches url and returns the body. */
class Clients {
    private val cio = HttpClient(CIO)
    private val ktorOkHttp = HttpClient(OkHttp)
    // Default dispatcher limits (5 calls per host): at concurrency 32 most
    // enqueued calls wait in its queue and are started by another call's thread.
    private val okhttp = OkHttpClient()
    private val jdk = java.net.http.HttpClient.newBuilder()
        .version(java.net.http.HttpClient.Version.HTTP_1_1).build()

    val names = listOf("cio", "ktor-okhttp", "okhttp-execute", "okhttp-enqueue", "jdk-send", "jdk-sendasync", "urlconnection")

    suspend fun fetch(client: String, url: String): String = when (client) {
        "cio" -> ktor(cio, url)
        "ktor-okhttp" -> ktor(ktorOkHttp, url)
        "okhttp-execute" -> withContext(Dispatchers.IO) {
            okhttp.newCall(Request.Builder().url(url).build()).execute().use { body(it.code, it.body.string()) }
        }
        "okhttp-enqueue" -> suspendCancellableCoroutine { cont ->
            okhttp.newCall(Request.Builder().url(url).build()).enqueue(object : Callback {
                override fun onFailure(call: Call, e: IOException) = cont.resumeWithException(e)
                override fun onResponse(call: Call, response: Response) {
                    val r = runCatching { response.use { body(it.code, it.body.string()) } }
                    r.fold({ cont.resume(it) }, { cont.resumeWithException(it) })
                }
            })
        }
        "jdk-send" -> withContext(Dispatchers.IO) {
            val r = jdk.send(jdkRequest(url), HttpResponse.BodyHandlers.ofString())
            body(r.statusCode(), r.body())
        }
        "jdk-sendasync" -> {
            val r = jdk.sendAsync(jdkRequest(url), HttpResponse.BodyHandlers.ofString()).await()
            body(r.statusCode(), r.body())
        }
        "urlconnection" -> withContext(Dispatchers.IO) {
            val c = URI(url).toURL().openConnection() as HttpURLConnection
            try {
                body(c.responseCode, c.inputStream.bufferedReader().readText())
            } finally {
                c.inputStream.close()
            }
        }
        else -> throw IllegalArgumentException("no client $client")
    }

    private suspend fun ktor(c: HttpClient, url: String): String {
        val r = c.get(url)
        return body(r.status.value, r.bodyAsText())
    }

    private fun jdkRequest(url: String) = java.net.http.HttpRequest.newBuilder(URI(url)).GET().build()

    private fun body(status: Int, text: String): String {
        if (status != 200) throw BackendError("backend answered $status")
        return text
    }
}

fun main() {
    val bind = env("BIND", "127.0.0.1")
    val port = env("PORT", "8080").toInt()
    val backend = env("BACKEND_URL", "http://127.0.0.1:8082").trimEnd('/')
    val clients = Clients()
    val server = embeddedServer(Netty, port = port, host = bind) {
        routing {
            get("/health") { call.respondText("ok") }
            get("/{client}/{n}") {
                val client = call.parameters["client"]!!
                val n = call.parameters["n"]!!
                if (client !in clients.names) {
                    call.respondText("no client $client", status = HttpStatusCode.NotFound)
                    return@get
                }
                delay(Random.nextLong(0, 11))
                call.respondText(clients.fetch(client, "$backend/work/$n/$client"))
            }
            get("/fan/{n}") {
                val n = call.parameters["n"]!!
                val parts = coroutineScope {
                    listOf("okhttp-enqueue", "jdk-sendasync", "cio").map { client ->
                        async {
                            delay(Random.nextLong(0, 11))
                            clients.fetch(client, "$backend/work/$n/fan-$client")
                        }
                    }.awaitAll()
                }
                call.respondText(parts.joinToString(" "))
            }
        }
    }
    server.start(wait = false)
    val bound = runBlocking { server.engine.resolvedConnectors().first().port }
    println("ktor3: listening on http://$bind:$bound, backend $backend")
    Thread.currentThread().join()
}
