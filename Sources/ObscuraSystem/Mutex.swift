#if canImport(Glibc)
import Glibc
#endif

/// A value and the lock that guards it, with the interface of the standard
/// library's `Synchronization.Mutex` (which it shadows in every module that
/// imports this one), built on a pthread mutex.
///
/// Why not the standard one: on Linux it locks through futex system calls
/// that ThreadSanitizer cannot see, so every access it guards looks like a
/// race to `swift test --sanitize=thread`, and real races would hide among
/// them. pthread mutexes are what the sanitizer models; the cost is the
/// same (glibc's mutex is a futex with a user-space fast path).
///
/// `@unchecked Sendable`: `value` is read and written only between
/// `pthread_mutex_lock` and `pthread_mutex_unlock` of `mutex`.
public final class Mutex<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The value lives beside the lock, outside the object, so that its
    /// accesses are plain memory accesses made under the lock.
    private let value: UnsafeMutablePointer<Value>

    public init(_ initialValue: sending Value) {
        mutex = makeErrorCheckingMutex()
        value = .allocate(capacity: 1)
        value.initialize(to: initialValue)
    }

    deinit {
        value.deinitialize(count: 1)
        value.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, the lock held. Not reentrant: calling
    /// `withLock` on the same mutex inside `body` traps.
    public func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        let locked = pthread_mutex_lock(mutex)
        precondition(locked == 0, "Mutex.withLock: pthread_mutex_lock failed (\(locked)): locked again by the thread holding it")
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }

    /// As `withLock`, but nil at once (body not run) when the lock is held.
    public func withLockIfAvailable<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}

/// A lock without a value of its own, taken and let go by hand, for a class
/// whose stored properties it guards across the steps of a loop
/// (DataSyncer); an error-checking pthread mutex, as `Mutex`'s.
///
/// `@unchecked Sendable`: `mutex` is only passed to pthread's own calls.
public final class Lock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = makeErrorCheckingMutex()
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    public func lock() {
        let locked = pthread_mutex_lock(mutex)
        precondition(locked == 0, "Lock.lock: pthread_mutex_lock failed (\(locked)): locked again by the thread holding it")
    }

    public func unlock() {
        let unlocked = pthread_mutex_unlock(mutex)
        precondition(unlocked == 0, "Lock.unlock: pthread_mutex_unlock failed (\(unlocked)): not held by this thread")
    }
}

/// A pthread mutex of its own allocation, error-checking: a thread locking
/// what it holds traps instead of hanging.
private func makeErrorCheckingMutex() -> UnsafeMutablePointer<pthread_mutex_t> {
    let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    var attributes = pthread_mutexattr_t()
    pthread_mutexattr_init(&attributes)
    pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
    pthread_mutex_init(mutex, &attributes)
    pthread_mutexattr_destroy(&attributes)
    return mutex
}
