import CSystem
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// A thread of its own for blocking work (reads, polls, ioctl waits) that
/// must never run on Swift's cooperative pool. It is joined, not polled:
/// `join()` returns when the body has returned (pthread_join). The body
/// must not hold its owner strongly, so that the owner's deinit can tell it
/// to stop (through a `Wakeup`) and join it.
public final class JoinableThread: Sendable {
    public let name: String
    /// The thread until it is joined (or detached); nil afterwards.
    private let thread = Mutex<pthread_t?>(nil)

    private final class Start {
        let body: @Sendable () -> Void
        init(body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Starts `body` on a new thread named `name` (the kernel keeps 15 bytes of it).
    public init(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        self.name = name
        let start = Unmanaged.passRetained(Start(body: body)).toOpaque()
        var handle = pthread_t()
        let rc = pthread_create(&handle, nil, { argument in
            let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
            start.body()
            return nil
        }, start)
        guard rc == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            throw SystemError(call: "pthread_create", code: rc, detail: name)
        }
        _ = obscura_name_thread(handle, name)  // named before init returns
        thread.withLock { $0 = handle }
    }

    /// Waits for the body to return. Once only; later calls return at once.
    /// Called on the thread itself (its owner's last reference went there),
    /// it detaches instead: a thread cannot wait for itself.
    public func join() {
        guard let handle = thread.withLock({ t -> pthread_t? in defer { t = nil }; return t }) else { return }
        if pthread_equal(handle, pthread_self()) != 0 {
            pthread_detach(handle)
        } else {
            pthread_join(handle, nil)
        }
    }

    /// Whether this is the calling thread.
    public var isCurrent: Bool {
        thread.withLock { t in t.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    deinit { join() }
}

/// An eventfd a thread polls beside what it waits for, so that another
/// thread can wake it at once (to stop, or to look at new state).
public final class Wakeup: Sendable {
    public let descriptor: OwnedFileDescriptor
    public var fd: Int32 { descriptor.rawValue }

    public init() throws(SystemError) {
        let fd = obscura_eventfd()
        guard fd >= 0 else { throw SystemError.errno("eventfd", "a thread's wakeup") }
        descriptor = OwnedFileDescriptor(adopting: fd)
    }

    /// Wakes the thread (and every later poll until `drain`).
    public func signal() {
        // (Fails only when the counter would overflow: it is signalled then.)
        try? Syscalls.writeAll(fd, withUnsafeBytes(of: UInt64(1)) { Array($0) }, path: "a thread's wakeup")
    }

    /// Takes the signals seen so far.
    public func drain() {
        var count: UInt64 = 0
        // (EAGAIN: nothing to take.)
        _ = try? withUnsafeMutableBytes(of: &count) { buffer throws(SystemError) in try Syscalls.read(fd, into: buffer, path: "a thread's wakeup") }
    }

    /// Waits until `fd` is readable, the wakeup is signalled, or `timeout`
    /// passes (nil: no limit). Returns whether `fd` is readable; the wakeup's
    /// signal is left for the caller to see with `isSignalled`.
    public func wait(for fd: Int32?, timeout: Duration?) throws(SystemError) -> Bool {
        var fds = [pollfd(fd: self.fd, events: Int16(POLLIN), revents: 0)]
        if let fd { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        let milliseconds: Int32 = timeout.map { t in
            let ms = t.components.seconds * 1000 + (t.components.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
            return Int32(clamping: max(0, ms))
        } ?? -1
        try Syscalls.poll(&fds, milliseconds: milliseconds, what: "fd \(fd.map(String.init) ?? "-") and a wakeup")
        return fds.count > 1 && fds[1].revents & Int16(POLLIN | POLLERR | POLLHUP) != 0
    }

    /// Whether a signal is pending (without taking it).
    public var isSignalled: Bool {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        return ((try? Syscalls.poll(&fds, milliseconds: 0, what: "a thread's wakeup")) ?? 0) > 0
    }
}

/// A serial task executor on a thread of its own, for tasks whose work
/// blocks — encoders that poll their device, writes and fsyncs to a slow
/// card — so that it never runs on Swift's cooperative pool:
/// `Task(executorPreference: executor) { … }` runs such a task's
/// nonisolated code here, one job at a time.
///
/// The owner keeps the executor alive while any task prefers it (a task
/// may hold it unowned); its deinit ends the thread and joins it.
public final class ThreadExecutor: TaskExecutor, SerialExecutor, Sendable {
    public let name: String
    private let queue: JobQueue
    private let thread = Mutex<JoinableThread?>(nil)

    /// Jobs waiting, and whether the thread should end.
    private final class JobQueue: Sendable {
        let state = Mutex<(jobs: [UnownedJob], ending: Bool)>(([], false))
        let wakeup: Wakeup
        /// Where jobs enqueued after the thread ended run.
        let afterEnd = DispatchQueue(label: "obscura.executor-after-end")
        init(wakeup: Wakeup) { self.wakeup = wakeup }
    }

    public init(name: String) throws(SystemError) {
        self.name = name
        let queue = JobQueue(wakeup: try Wakeup())
        self.queue = queue
        // The thread runs jobs as this executor's, without holding it: the
        // executor's deinit joins the thread before its memory goes.
        let executor = Unmanaged.passUnretained(self)
        let started = try JoinableThread(name: name) {
            Self.run(queue, executor.takeUnretainedValue().asUnownedSerialExecutor(),
                     executor.takeUnretainedValue().asUnownedTaskExecutor())
        }
        thread.withLock { $0 = started }
    }

    private static func run(_ queue: JobQueue, _ serial: UnownedSerialExecutor, _ task: UnownedTaskExecutor) {
        while true {
            let (jobs, ending) = queue.state.withLock { s in
                defer { s.jobs.removeAll(keepingCapacity: true) }
                return (s.jobs, s.ending)
            }
            for job in jobs { job.runSynchronously(isolatedTo: serial, taskExecutor: task) }
            if jobs.isEmpty {
                if ending { return }
                _ = try? queue.wakeup.wait(for: nil, timeout: nil)
                queue.wakeup.drain()
            }
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let taken = queue.state.withLock { s in
            if s.ending { return false }
            s.jobs.append(unowned)
            return true
        }
        if taken {
            queue.wakeup.signal()
        } else {
            let serial = asUnownedSerialExecutor(), task = asUnownedTaskExecutor()
            queue.afterEnd.async { unowned.runSynchronously(isolatedTo: serial, taskExecutor: task) }
        }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    /// Whether the caller runs on this executor's thread.
    public var isCurrent: Bool { thread.withLock { $0?.isCurrent ?? false } }

    /// Ends the thread once the jobs queued so far have run, and joins it:
    /// the owner's way to end it from its own thread while a task may still
    /// hold the executor (a task retains the executor it prefers, and would
    /// otherwise release it last, and end the thread, on the thread itself).
    /// Jobs of such tasks enqueued afterwards still run, one at a time, on
    /// a dispatch queue.
    public func shutDown() {
        queue.state.withLock { $0.ending = true }
        queue.wakeup.signal()
        thread.withLock { $0 }?.join()
    }

    deinit { shutDown() }
}

extension Syscalls {
    /// Names the process as ps, pgrep and the journal show it (the calling
    /// thread's name: call it from the main thread), cut to 15 bytes. A name
    /// not taken changes nothing else, so its error is not reported.
    public static func nameProcess(_ name: String) {
        _ = obscura_name_thread(pthread_self(), name)
    }

    /// Replaces this process with `path` (execv), `arguments` its argv
    /// (the first one the name it is known by). Returns only by throwing.
    public static func execute(_ path: String, _ arguments: [String]) throws(SystemError) -> Never {
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        execv(path, argv)
        let error = SystemError.errno("execv", path)
        argv.forEach { free($0) }
        throw error
    }
}

extension JoinableThread {
    /// Runs blocking `body` (file syncs, waits for a child process) on a
    /// thread of its own, never on Swift's pool, and returns what it
    /// returned once the thread is joined.
    public static func result<T: Sendable>(name: String, _ body: @escaping @Sendable () -> T) async throws(SystemError) -> T {
        let box = Mutex<JoinableThread?>(nil)
        let outcome = await withCheckedContinuation { (done: CheckedContinuation<Result<T, SystemError>, Never>) in
            do throws(SystemError) {
                let thread = try JoinableThread(name: name) { done.resume(returning: .success(body())) }
                box.withLock { $0 = thread }
            } catch {
                done.resume(returning: .failure(error))
            }
        }
        // (The body has returned; its thread ends at once.)
        box.withLock { $0 }?.join()
        return try outcome.get()
    }
}
