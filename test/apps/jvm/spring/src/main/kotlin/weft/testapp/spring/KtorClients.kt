// Ktor's client engines, called from the Spring app's Java code.
package weft.testapp.spring

import io.ktor.client.HttpClient
import io.ktor.client.engine.apache5.Apache5
import io.ktor.client.engine.cio.CIO
import io.ktor.client.engine.java.Java
import io.ktor.client.engine.okhttp.OkHttp
import io.ktor.client.request.get
import io.ktor.client.statement.bodyAsText
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.future.future
import java.util.concurrent.CompletableFuture

object KtorClients {
    private val engines = mapOf(
        "ktor-cio" to HttpClient(CIO),
        "ktor-okhttp" to HttpClient(OkHttp),
        "ktor-java" to HttpClient(Java),
        "ktor-apache5" to HttpClient(Apache5),
    )

    /**
     * Fetches url with the named engine in a coroutine that starts on the
     * calling thread (Dispatchers.Unconfined, as Spring runs suspending
     * handlers), and completes with the body.
     */
    @JvmStatic
    fun fetch(name: String, url: String): CompletableFuture<String> {
        val client = engines[name] ?: return CompletableFuture.failedFuture(IllegalArgumentException("no client $name"))
        return CoroutineScope(Dispatchers.Unconfined).future {
            val r = client.get(url)
            check(r.status.value == 200) { "backend answered ${r.status.value}" }
            r.bodyAsText()
        }
    }
}
