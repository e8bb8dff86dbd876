// The Ktor test app (built against Ktor 2.x as ktor2 and 3.x as ktor3):
// every JVM HTTP client it calls its backend through, and what its routes
// do. GET /{client}/{n} waits 0-10 ms, then calls
// BACKEND_URL/work/{n}/{client}; GET /fan/{n} calls three clients at once
// (/work/{n}/fan-{client}); GET /flow/{n} calls two, one after the other,
// from a flow that runs on Dispatchers.IO (/work/{n}/flow-{client}). The
// request number n in the paths makes a span under the wrong request visible.
package weft.testapp.ktor

import io.ktor.client.HttpClient
import io.ktor.client.engine.apache5.Apache5
import io.ktor.client.engine.cio.CIO
import io.ktor.client.engine.java.Java
import io.ktor.client.engine.okhttp.OkHttp
import io.ktor.client.request.get
import io.ktor.client.statement.bodyAsText
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.flowOf
import kotlinx.coroutines.flow.flowOn
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.future.await
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlinx.coroutines.withContext
import okhttp3.Call
import org.apache.hc.client5.http.async.methods.SimpleHttpResponse
import org.apache.hc.client5.http.async.methods.SimpleRequestBuilder
import org.apache.hc.client5.http.classic.methods.HttpGet
import org.apache.hc.client5.http.impl.async.HttpAsyncClients
import org.apache.hc.client5.http.impl.classic.HttpClients
import org.apache.hc.core5.concurrent.FutureCallback
import org.apache.hc.core5.http.io.entity.EntityUtils
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

internal fun env(name: String, default: String): String =
    System.getenv(name)?.takeIf { it.isNotBlank() } ?: default

class BackendError(message: String) : Exception(message)

/** The routes' work, whatever Ktor serves them. */
class Routes(private val backend: String) {
    val clients = Clients()

    /** GET /{client}/{n}: null when there is no such client. */
    suspend fun call(client: String, n: String): String? {
        if (client !in clients.names) return null
        delay(Random.nextLong(0, 11))
        return clients.fetch(client, "$backend/work/$n/$client")
    }

    /** GET /fan/{n}. */
    suspend fun fan(n: String): String = coroutineScope {
        listOf("okhttp-enqueue", "jdk-sendasync", "cio").map { client ->
            async {
                delay(Random.nextLong(0, 11))
                clients.fetch(client, "$backend/work/$n/fan-$client")
            }
        }.awaitAll().joinToString(" ")
    }

    /** GET /flow/{n}: flowOn runs the upstream in a coroutine of its own, on another dispatcher, behind a channel. */
    suspend fun flow(n: String): String = flowOf("okhttp-enqueue", "cio")
        .map { client ->
            delay(Random.nextLong(0, 11))
            clients.fetch(client, "$backend/work/$n/flow-$client")
        }
        .flowOn(Dispatchers.IO)
        .toList()
        .joinToString(" ")
}

/** Each client, by the name its route uses; every one fetches url and returns the body. */
class Clients {
    private val cio = HttpClient(CIO)
    private val ktorOkHttp = HttpClient(OkHttp)
    private val ktorJava = HttpClient(Java) // the JDK's HttpClient underneath
    private val ktorApache5 = HttpClient(Apache5) // Apache HttpClient 5 async underneath
    // Default dispatcher limits (5 calls per host): at concurrency 32 most
    // enqueued calls wait in its queue and are started by another call's thread.
    private val okhttp = OkHttpClient()
    private val jdk = java.net.http.HttpClient.newBuilder()
        .version(java.net.http.HttpClient.Version.HTTP_1_1).build()
    // Apache HttpClient 5, the version Ktor's Apache5 engine brings.
    private val apacheClassic = HttpClients.createDefault()
    private val apacheAsync = HttpAsyncClients.createDefault().also { it.start() }
    // Reactor Netty's HttpClient (what Spring's WebClient runs on), called from a coroutine.
    private val reactorNetty = reactor.netty.http.client.HttpClient.create()

    val names = listOf("cio", "ktor-okhttp", "ktor-java", "ktor-apache5", "okhttp-execute", "okhttp-enqueue", "jdk-send", "jdk-sendasync", "urlconnection",
        "apache5-classic", "apache5-async", "reactor-netty")

    suspend fun fetch(client: String, url: String): String = when (client) {
        "cio" -> ktor(cio, url)
        "ktor-okhttp" -> ktor(ktorOkHttp, url)
        "ktor-java" -> ktor(ktorJava, url)
        "ktor-apache5" -> ktor(ktorApache5, url)
        "okhttp-execute" -> withContext(Dispatchers.IO) {
            okhttp.newCall(Request.Builder().url(url).build()).execute().use { body(it.code, it.body!!.string()) }
        }
        "okhttp-enqueue" -> suspendCancellableCoroutine { cont ->
            okhttp.newCall(Request.Builder().url(url).build()).enqueue(object : Callback {
                override fun onFailure(call: Call, e: IOException) = cont.resumeWithException(e)
                override fun onResponse(call: Call, response: Response) {
                    val r = runCatching { response.use { body(it.code, it.body!!.string()) } }
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
        "apache5-classic" -> withContext(Dispatchers.IO) {
            apacheClassic.execute(HttpGet(url)) { r -> body(r.code, EntityUtils.toString(r.entity)) }
        }
        "apache5-async" -> suspendCancellableCoroutine { cont ->
            apacheAsync.execute(SimpleRequestBuilder.get(url).build(), object : FutureCallback<SimpleHttpResponse> {
                override fun completed(r: SimpleHttpResponse) {
                    runCatching { body(r.code, r.bodyText) }.fold({ cont.resume(it) }, { cont.resumeWithException(it) })
                }
                override fun failed(e: Exception) = cont.resumeWithException(e)
                override fun cancelled() {
                    cont.cancel()
                }
            })
        }
        "reactor-netty" -> reactorNetty.get().uri(url)
            .responseSingle { r, content -> content.asString().defaultIfEmpty("").map { body(r.status().code(), it) } }
            // Reactor 3.8's nullness annotations make the awaited value String?.
            .toFuture().await() ?: throw BackendError("no response")
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
