// The Ktor test app's server (Netty, or CIO with KTOR_ENGINE=cio), built
// against Ktor 2.x as ktor2 and 3.x as ktor3: the routes of Routes
// (Clients.kt), which call the backend through each JVM HTTP client. (The `call` import is Ktor 2's; on Ktor 3
// the routing context's own `call` wins over it.)
package weft.testapp.ktor

import io.ktor.http.HttpStatusCode
import io.ktor.server.application.call
import io.ktor.server.application.Application
import io.ktor.server.cio.CIO
import io.ktor.server.engine.embeddedServer
import io.ktor.server.netty.Netty
import io.ktor.server.response.respondText
import io.ktor.server.routing.get
import io.ktor.server.routing.routing

fun main() {
    val bind = env("BIND", "127.0.0.1")
    val port = env("PORT", "8080").toInt()
    val backend = env("BACKEND_URL", "http://127.0.0.1:8082").trimEnd('/')
    val routes = Routes(backend)
    val module: Application.() -> Unit = {
        routing {
            get("/health") { call.respondText("ok") }
            get("/{client}/{n}") {
                val client = call.parameters["client"]!!
                val body = routes.call(client, call.parameters["n"]!!)
                if (body == null) {
                    call.respondText("no client $client", status = HttpStatusCode.NotFound)
                } else {
                    call.respondText(body)
                }
            }
            get("/fan/{n}") { call.respondText(routes.fan(call.parameters["n"]!!)) }
            get("/flow/{n}") { call.respondText(routes.flow(call.parameters["n"]!!)) }
        }
    }
    val engine = env("KTOR_ENGINE", "netty")
    when (engine) {
        "netty" -> embeddedServer(Netty, port = port, host = bind, module = module).start(wait = false)
        "cio" -> embeddedServer(CIO, port = port, host = bind, module = module).start(wait = false)
        else -> error("KTOR_ENGINE=$engine: want netty or cio")
    }
    println("ktor test app ($engine): listening on http://$bind:$port, backend $backend")
    Thread.currentThread().join()
}
