package dev.weft.agent

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.cancel
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.withContext
import kotlinx.coroutines.yield
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.CountDownLatch

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CoroutineTest {
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
    private val failures = ConcurrentLinkedQueue<String>()

    @AfterAll
    fun stop() = scope.cancel()

    private fun expect(id: Long, where: String) {
        val slot = Slots.now()
        if (slot != id) failures.add("$where: slot $slot, expected $id on ${Thread.currentThread().name}")
    }

    /** Starts a "request": a coroutine launched while its id is mounted, as a server would. */
    private fun request(id: Long, body: suspend () -> Unit) =
        run {
            var job: kotlinx.coroutines.Deferred<Unit>? = null
            Slots.under(id) { job = scope.async { body() } }
            job!!
        }

    /**
     * Runs body, started under no id, and waits for its end. (Not
     * runBlocking: its binary name changed in 1.10, and CoroutineFloorTest
     * runs this class on 1.7 too.)
     */
    @OptIn(kotlinx.coroutines.ExperimentalCoroutinesApi::class)
    private fun <T> blocking(body: suspend CoroutineScope.() -> T): T {
        var d: kotlinx.coroutines.Deferred<T>? = null
        Slots.under(0) { d = scope.async(block = body) }
        val done = CountDownLatch(1)
        d!!.invokeOnCompletion { done.countDown() }
        done.await()
        d!!.getCompletionExceptionOrNull()?.let { throw it }
        return d!!.getCompleted()
    }

    private fun assertNoFailures() = assertTrue(failures.isEmpty(), failures.joinToString("\n"))

    @Test
    fun hopsAndDelaysKeepTheId() = blocking {
        failures.clear()
        val jobs = (1..40).map {
            val id = Slots.freshId()
            request(id) {
                expect(id, "start")
                withContext(Dispatchers.IO) {
                    expect(id, "io")
                    delay(5)
                    expect(id, "io after delay")
                    withContext(Dispatchers.Default) { expect(id, "default in io") }
                    expect(id, "io again")
                }
                delay(3)
                expect(id, "after delay")
                yield()
                expect(id, "after yield")
                val child = scope.launch { delay(2); expect(id, "child launched from the request") }
                child.join()
                expect(id, "after join")
            }
        }
        jobs.awaitAll()
        assertNoFailures()
    }

    @Test
    fun noIdMeansNothingMountedAndExceptionsRestore() = blocking {
        failures.clear()
        val id = Slots.freshId()
        val failing = request(id) {
            withContext(Dispatchers.IO) {
                expect(id, "before throw")
                throw IllegalStateException("boom")
            }
        }
        runCatching { failing.await() }
        // Plenty of id-less work on the same pools: none may see a stale id.
        (1..200).map {
            scope.async(Dispatchers.IO) {
                expect(0, "id-less io")
                delay(1)
                expect(0, "id-less io after delay")
            }
        }.awaitAll()
        assertNoFailures()
    }

    class Job(val n: Int, val reply: CompletableDeferred<Long>)

    private suspend fun backendCall(): Long = withContext(Dispatchers.IO) {
        delay(2)
        Slots.now()
    }

    /** The /shared pattern: one long-lived worker serves every request's jobs. */
    private fun sharedWorker(channel: Channel<Job>, useIterator: Boolean) {
        Slots.under(0) {
            scope.launch {
                if (useIterator) {
                    for (job in channel) {
                        delay(1) // a suspension before the worker's backend call
                        job.reply.complete(backendCall())
                    }
                } else {
                    while (true) {
                        val job = channel.receiveCatching().getOrNull() ?: break
                        yield()
                        job.reply.complete(backendCall())
                    }
                }
            }
        }
    }

    /** 30 requests send a job each; [oneByOne]: each after the previous one's reply, so the worker is waiting. */
    private fun checkShared(channel: Channel<Job>, oneByOne: Boolean = false) = blocking {
        failures.clear()
        val ids = (1..30).map { Slots.freshId() }
        val done = ids.mapIndexed { i, id ->
            val r = request(id) {
                delay((i % 3).toLong())
                val reply = CompletableDeferred<Long>()
                channel.send(Job(i, reply))
                val seenByWorker = reply.await()
                if (seenByWorker != id) failures.add("job $i: worker's backend call saw $seenByWorker, expected $id")
                expect(id, "sender after the reply")
            }
            if (oneByOne) r.await()
            r
        }
        done.awaitAll()
        channel.close(null) // not close(): its default-argument bridge is newer than 1.7
        assertNoFailures()
    }

    @Test
    fun sharedWorkerIteratorRendezvous() {
        val ch = Channel<Job>()
        sharedWorker(ch, useIterator = true)
        checkShared(ch)
    }

    /** Elements wait in the buffer: receiveCatching() returns them without suspending. */
    @Test
    fun sharedWorkerReceiveCatchingBuffered() {
        val ch = Channel<Job>(capacity = 64)
        sharedWorker(ch, useIterator = false)
        checkShared(ch)
    }

    /** The worker is suspended in receiveCatching() when a job arrives: the sender resumes it. */
    @Test
    fun sharedWorkerReceiveCatchingRendezvous() {
        val ch = Channel<Job>()
        sharedWorker(ch, useIterator = false)
        checkShared(ch, oneByOne = true)
    }

    @Test
    fun sharedWorkerTrySendUnlimited() {
        val ch = Channel<Job>(Channel.UNLIMITED)
        sharedWorker(ch, useIterator = true)
        blocking {
            failures.clear()
            val ids = (1..20).map { Slots.freshId() }
            ids.mapIndexed { i, id ->
                request(id) {
                    val reply = CompletableDeferred<Long>()
                    check(ch.trySend(Job(i, reply)).isSuccess)
                    val seen = reply.await()
                    if (seen != id) failures.add("trySend job $i: worker saw $seen, expected $id")
                }
            }.awaitAll()
            ch.close(null)
            assertNoFailures()
        }
    }
}
