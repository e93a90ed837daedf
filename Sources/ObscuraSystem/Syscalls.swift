import struct Synchronization.Atomic
#if canImport(Glibc)
import Glibc
#endif

/// The one place Obscura calls the kernel for descriptors and mappings, so
/// that every failure names its call.
public enum Syscalls {
    public static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) throws(SystemError) -> OwnedFileDescriptor {
        while true {
            let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
            if fd >= 0 { return OwnedFileDescriptor(adopting: fd) }
            if errno == EINTR { continue }
            throw SystemError.errno("open", path)
        }
    }

    /// fsync, EINTR retried. A failure is the storage's: what was written
    /// may not be on it (and a later fsync may not say so again).
    public static func fsync(_ fd: Int32, path: String) throws(SystemError) {
        while Glibc.fsync(fd) != 0 {
            if errno == EINTR { continue }
            throw SystemError.errno("fsync", path)
        }
    }

    /// fdatasync, EINTR retried; as `fsync`, for the data and the size only.
    public static func fdatasync(_ fd: Int32, path: String) throws(SystemError) {
        while Glibc.fdatasync(fd) != 0 {
            if errno == EINTR { continue }
            throw SystemError.errno("fdatasync", path)
        }
    }

    /// Writes all of `bytes` to a reader that may go (a player, a viewer's
    /// ssh): false when it has gone (EPIPE), an error for anything else.
    public static func writeAllUnlessGone(_ fd: Int32, _ bytes: some Collection<UInt8>, path: String) throws(SystemError) -> Bool {
        do {
            try writeAll(fd, bytes, path: path)
            return true
        } catch where error.code == EPIPE {
            return false
        }
    }

    /// Writes all of `bytes` to `fd` (short writes continued, EINTR retried);
    /// `path` names what `fd` is in the error.
    public static func writeAll(_ fd: Int32, _ bytes: some Collection<UInt8>, path: String) throws(SystemError) {
        let contiguous = Array(bytes)
        var offset = 0
        while offset < contiguous.count {
            let n = contiguous.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if Glibc.errno == EINTR { continue }
                throw SystemError.errno("write", path)
            }
            offset += n
        }
    }

    /// Reads up to `count` bytes at `offset` (fewer only at the end of the
    /// file; short reads continued, EINTR retried).
    public static func readAt(_ fd: Int32, offset: Int64, count: Int, path: String) throws(SystemError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress! + done, $0.count - done, off_t(offset + Int64(done))) }
            if n < 0 {
                if Glibc.errno == EINTR { continue }
                throw SystemError.errno("pread", path)
            }
            if n == 0 { break }
            done += n
        }
        return Array(bytes[..<done])
    }

    /// Writes `count` bytes from `bytes` to `fd` at `offset` (short writes
    /// continued, EINTR retried). `written` counts what reached the file,
    /// also when a later part fails.
    public static func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawPointer, count: Int, at offset: Int64, path: String,
                                 written done: inout Int) throws(SystemError) {
        done = 0
        while done < count {
            let n = Glibc.pwrite(fd, bytes + done, count - done, off_t(offset + Int64(done)))
            if n < 0 {
                if Glibc.errno == EINTR { continue }
                throw SystemError.errno("pwrite", path)
            }
            done += n
        }
    }

    /// Reads `count` bytes at `offset` into `buffer` (short reads continued,
    /// EINTR retried); returns how many there were (fewer only at the end).
    public static func preadAll(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64,
                                path: String) throws(SystemError) -> Int {
        var done = 0
        while done < count {
            let n = Glibc.pread(fd, buffer + done, count - done, off_t(offset + Int64(done)))
            if n < 0 {
                if Glibc.errno == EINTR { continue }
                throw SystemError.errno("pread", path)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// One read of at most `buffer.count` bytes (EINTR retried): 0 at the
    /// end; EAGAIN (a non-blocking fd with nothing to read) is thrown.
    /// What `fd` reads to its end (a file, a pipe, standard input).
    public static func readToEnd(_ fd: Int32, path: String) throws(SystemError) -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 << 10, alignment: 1)
        defer { buffer.deallocate() }
        var bytes: [UInt8] = []
        while true {
            let n = try read(fd, into: buffer, path: path)
            if n == 0 { return bytes }
            bytes += buffer[..<n]
        }
    }

    /// The whole file at `path`.
    public static func readFile(_ path: String) throws(SystemError) -> [UInt8] {
        let file = try open(path, O_RDONLY | O_CLOEXEC)
        return try readToEnd(file.rawValue, path: path)
    }

    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, path: String) throws(SystemError) -> Int {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("read", path)
        }
    }

    /// poll, EINTR retried with what is left of `milliseconds` (-1: no
    /// limit). Returns how many descriptors have events.
    @discardableResult
    public static func poll(_ fds: inout [pollfd], milliseconds: Int32, what: String) throws(SystemError) -> Int {
        let deadline = milliseconds < 0 ? nil : monotonicNanoseconds() + UInt64(milliseconds) * 1_000_000
        var wait = milliseconds
        while true {
            let n = Glibc.poll(&fds, nfds_t(fds.count), wait)
            if n >= 0 { return Int(n) }
            if Glibc.errno != EINTR { throw SystemError.errno("poll", what) }
            if let deadline {
                let now = monotonicNanoseconds()
                wait = now >= deadline ? 0 : Int32(clamping: (deadline - now) / 1_000_000)
            }
        }
    }

    /// A socket of its own (close-on-exec).
    public static func socket(_ domain: Int32, _ type: Int32, _ proto: Int32 = 0, what: String) throws(SystemError) -> OwnedFileDescriptor {
        let fd = Glibc.socket(domain, type | Int32(SOCK_CLOEXEC.rawValue), proto)
        guard fd >= 0 else { throw SystemError.errno("socket", what) }
        return OwnedFileDescriptor(adopting: fd)
    }

    /// A Unix socket's address for `path` (ENAMETOOLONG when it does not fit).
    public static func unixAddress(_ path: String, for call: String) throws(SystemError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SystemError(call: call, code: ENAMETOOLONG, detail: path)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
        return address
    }

    /// Binds `fd` to the Unix socket `path`, made with `mode`: the socket's
    /// own mode is set before bind, so the node is born with `mode` less the
    /// umask (never wider for a moment), then given `mode` exactly.
    public static func bind(_ fd: Int32, unixPath path: String, mode: mode_t) throws(SystemError) {
        try setMode(fd, mode, path: "socket for \(path)")
        try bind(fd, unixPath: path)
        try setMode(path, mode)
    }

    /// Binds `fd` to the Unix socket `path`.
    public static func bind(_ fd: Int32, unixPath path: String) throws(SystemError) {
        var address = try unixAddress(path, for: "bind")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw SystemError.errno("bind", path) }
    }

    /// Binds `fd` to an address given as its bytes (e.g. a `sockaddr_nl`).
    public static func bind(_ fd: Int32, address: [UInt8], what: String) throws(SystemError) {
        let bound = address.withUnsafeBytes { Glibc.bind(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count)) }
        guard bound == 0 else { throw SystemError.errno("bind", what) }
    }

    /// Connects `fd` to the Unix socket `path` (EINTR: the connection goes on
    /// in the background, waited for by the first read or write).
    public static func connect(_ fd: Int32, unixPath path: String) throws(SystemError) {
        var address = try unixAddress(path, for: "connect")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 || Glibc.errno == EINTR else { throw SystemError.errno("connect", path) }
    }

    /// Binds a TCP socket to 127.0.0.1:`port` (0: one the kernel picks) and
    /// returns the port it has.
    public static func bindLoopback(_ fd: Int32, port: UInt16) throws(SystemError) -> UInt16 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw SystemError.errno("bind", "127.0.0.1:\(port)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw SystemError.errno("getsockname", "127.0.0.1:\(port)") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Makes `fd`'s reads and writes block (or not).
    public static func setBlocking(_ fd: Int32, _ blocking: Bool, what: String) throws(SystemError) {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK) == 0 else {
            throw SystemError.errno("fcntl", what)
        }
    }

    public static func listen(_ fd: Int32, backlog: Int32 = SOMAXCONN, what: String) throws(SystemError) {
        guard Glibc.listen(fd, backlog) == 0 else { throw SystemError.errno("listen", what) }
    }

    /// One datagram to the Unix socket `path` (`@name`: the abstract
    /// namespace), from a socket of its own (systemd's notify socket).
    public static func sendDatagram(_ bytes: [UInt8], toUnix path: String) throws(SystemError) {
        let socket = try socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), what: path)
        let abstract = path.hasPrefix("@")
        let name = abstract ? String(path.dropFirst()) : path
        // Abstract: a NUL first, then the name (not NUL-terminated).
        var address = try unixAddress((abstract ? "\0" : "") + name, for: "sendto")
        let length = socklen_t(MemoryLayout<sa_family_t>.size + name.utf8.count + 1)
        while true {
            let sent = withUnsafePointer(to: &address) { a in
                bytes.withUnsafeBytes { b in
                    a.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.sendto(socket.rawValue, b.baseAddress, b.count, 0, $0, length) }
                }
            }
            if sent >= 0 { return }
            if Glibc.errno != EINTR { throw SystemError.errno("sendto", path) }
        }
    }

    /// Sends all of `bytes` on a connected socket (EINTR retried), with
    /// `flags` (MSG_NOSIGNAL: a peer that has gone is an EPIPE, not a signal).
    public static func sendAll(_ fd: Int32, _ bytes: some Collection<UInt8>, flags: Int32, what: String) throws(SystemError) {
        let contiguous = Array(bytes)
        var offset = 0
        while offset < contiguous.count {
            let n = contiguous.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, flags) }
            if n < 0 {
                if Glibc.errno == EINTR { continue }
                throw SystemError.errno("send", what)
            }
            offset += n
        }
    }

    /// Ends both directions of a connected socket: a send blocked on it in
    /// another thread returns (EPIPE). A socket already closed by its peer
    /// (ENOTCONN) is no error.
    public static func shutdown(_ fd: Int32, what: String) throws(SystemError) {
        guard Glibc.shutdown(fd, Int32(SHUT_RDWR)) == 0 || Glibc.errno == ENOTCONN else {
            throw SystemError.errno("shutdown", what)
        }
    }

    /// One receive of at most `buffer.count` bytes (EINTR retried).
    public static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, flags: Int32, what: String) throws(SystemError) -> Int {
        while true {
            let n = Glibc.recv(fd, buffer.baseAddress, buffer.count, flags)
            if n >= 0 { return n }
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("recv", what)
        }
    }

    /// Closes a descriptor the caller owns, once: never retried (on Linux
    /// the descriptor is gone even when close says EINTR, and its number may
    /// already be another's). What closing says is not news: a write's
    /// errors come from the write or the sync before it.
    public static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Cuts the file open as `fd` to `length` bytes.
    public static func truncate(_ fd: Int32, to length: Int64, path: String) throws(SystemError) {
        while Glibc.ftruncate(fd, off_t(length)) != 0 {
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("ftruncate", path)
        }
    }

    /// Gives the file at `old` the name `new`, replacing what `new` was
    /// (rename). Not durable by itself: the folder holds the name (see
    /// `publish`).
    public static func rename(_ old: String, _ new: String) throws(SystemError) {
        while Glibc.rename(old, new) != 0 {
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("rename", "\(old) → \(new)")
        }
    }

    /// The folder that holds the name `path` ("." for a bare name).
    public static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let folder = String(path[..<slash])
        return folder.isEmpty ? "/" : folder
    }

    /// fsync of the folder `path`: the names made, renamed or removed in it
    /// reach the storage (on ext4 they otherwise wait for the journal's next
    /// commit, up to 5 s).
    public static func syncFolder(_ path: String) throws(SystemError) {
        let folder = try open(path, O_RDONLY | O_DIRECTORY)
        try fsync(folder.rawValue, path: path)
    }

    /// Publishes a file whose bytes are already synced: renames `temporary`
    /// to `final`, then syncs the folder of `final`, so that once this
    /// returns the file is on the storage under its final name. Say "saved"
    /// only after it.
    public static func publish(_ temporary: String, as final: String) throws(SystemError) {
        try rename(temporary, final)
        try syncFolder(folder(of: final))
    }

    /// `publish` for a file not yet synced: fsync of `temporary` first.
    public static func syncAndPublish(_ temporary: String, as final: String) throws(SystemError) {
        let fd = try open(temporary, O_RDONLY)
        try fsync(fd.rawValue, path: temporary)
        fd.close()
        try publish(temporary, as: final)
    }

    /// Removes the name `path` (unlink); a name already absent is not an
    /// error when `missingIsFine`.
    public static func remove(_ path: String, missingIsFine: Bool = true) throws(SystemError) {
        if Glibc.unlink(path) == 0 { return }
        if missingIsFine && Glibc.errno == ENOENT { return }
        throw SystemError.errno("unlink", path)
    }

    /// Sets the permission bits of the file open as `fd` (fchmod).
    public static func setMode(_ fd: Int32, _ mode: mode_t, path: String) throws(SystemError) {
        while fchmod(fd, mode) != 0 {
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("fchmod", path)
        }
    }

    /// Sets the permission bits of the file at `path` (chmod).
    public static func setMode(_ path: String, _ mode: mode_t) throws(SystemError) {
        while chmod(path, mode) != 0 {
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("chmod", path)
        }
    }

    /// Gives the file at `path` to the group `group`, its owner unchanged
    /// (chown).
    public static func setGroup(_ path: String, _ group: gid_t) throws(SystemError) {
        while chown(path, uid_t.max, group) != 0 {
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("chown", "\(path) to group \(group)")
        }
    }

    /// The id of the group named `name` (getgrnam_r), or nil when there is
    /// no such group.
    public static func groupID(_ name: String) throws(SystemError) -> gid_t? {
        var group = Glibc.group()
        var found: UnsafeMutablePointer<Glibc.group>?
        var buffer = [CChar](repeating: 0, count: 4096)
        while true {
            let code = buffer.withUnsafeMutableBufferPointer { getgrnam_r(name, &group, $0.baseAddress, $0.count, &found) }
            if code == 0 { return found == nil ? nil : group.gr_gid }
            if code == ERANGE && buffer.count < 1 << 20 { buffer = [CChar](repeating: 0, count: buffer.count * 4); continue }
            if code == EINTR { continue }
            throw SystemError(call: "getgrnam_r", code: code, detail: name)
        }
    }

    /// What the kernel keeps of the file at `path` (stat: its mode, owner,
    /// group, size, device).
    public static func status(_ path: String) throws(SystemError) -> stat {
        var info = stat()
        while stat(path, &info) != 0 {
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("stat", path)
        }
        return info
    }

    /// What the kernel keeps of the file open as `fd` (fstat).
    public static func status(_ fd: Int32, path: String) throws(SystemError) -> stat {
        var info = stat()
        while fstat(fd, &info) != 0 {
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("fstat", path)
        }
        return info
    }

    /// What the kernel keeps of the name `path` itself, a symbolic link not
    /// followed (lstat).
    public static func linkStatus(_ path: String) throws(SystemError) -> stat {
        var info = stat()
        while lstat(path, &info) != 0 {
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("lstat", path)
        }
        return info
    }

    /// The bytes an unprivileged writer may still use on the filesystem that
    /// holds `path` (statvfs: f_bavail blocks of f_frsize).
    public static func freeBytes(_ path: String) throws(SystemError) -> Int {
        var info = statvfs()
        while statvfs(path.isEmpty ? "." : path, &info) != 0 {
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("statvfs", path)
        }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    /// Whether this process may reach `path` as `mode` asks (access: F_OK,
    /// R_OK, W_OK); the error says why not.
    public static func checkAccess(_ path: String, _ mode: Int32) throws(SystemError) {
        while access(path, mode) != 0 {
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("access", path)
        }
    }

    /// Removes the empty folder `path` (rmdir).
    public static func removeFolder(_ path: String) throws(SystemError) {
        while rmdir(path) != 0 {
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("rmdir", path)
        }
    }

    /// Takes the advisory lock on the file open as `fd` (flock, exclusive);
    /// false when another holds it and `wait` is false.
    public static func lock(_ fd: Int32, wait: Bool, path: String) throws(SystemError) -> Bool {
        while flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0 {
            if Glibc.errno == EINTR { continue }
            if Glibc.errno == EWOULDBLOCK && !wait { return false }
            throw SystemError.errno("flock", path)
        }
        return true
    }

    /// Lets go of the lock `lock` took (closing the file does too).
    public static func unlock(_ fd: Int32) {
        _ = flock(fd, LOCK_UN)
    }

    /// Ends the program by `signal` with its default action (as a shell
    /// expects of a tool whose reader went away: SIGPIPE, status 141).
    public static func endBySignal(_ signal: Int32) -> Never {
        Glibc.signal(signal, SIG_DFL)
        raise(signal)
        exit(128 + signal)
    }

    /// Unblocks every signal on the calling thread (pthread_sigmask). A
    /// program inherits the signal mask of the thread that started it, and a
    /// worker thread of a Swift or dispatch program blocks nearly all of
    /// them: started from one, SIGTERM and Ctrl-C did nothing (`obscura
    /// view` stopped by a test's `terminate()` went on until killed). For a
    /// program's main, before it starts any thread (threads inherit it too).
    public static func unblockAllSignals() throws(SystemError) {
        var none = sigset_t()
        sigemptyset(&none)
        let rc = pthread_sigmask(SIG_SETMASK, &none, nil)
        guard rc == 0 else { throw SystemError(call: "pthread_sigmask", code: rc) }
    }

    /// Sends `signal` to the process `pid` (kill); a process already gone is
    /// not an error.
    public static func signal(_ pid: pid_t, _ signal: Int32) throws(SystemError) {
        guard kill(pid, signal) != 0, Glibc.errno != ESRCH else { return }
        throw SystemError.errno("kill", "pid \(pid), signal \(signal)")
    }

    /// A receive timeout on the socket `fd` (SO_RCVTIMEO): a read waits at
    /// most `seconds`, then fails with EAGAIN.
    public static func setReceiveTimeout(_ fd: Int32, seconds: Int, what: String) throws(SystemError) {
        var limit = timeval(tv_sec: seconds, tv_usec: 0)
        guard setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
            throw SystemError.errno("setsockopt(SO_RCVTIMEO)", what)
        }
    }

    /// SO_REUSEADDR on the socket `fd`: a listener can bind again at once.
    public static func reuseAddress(_ fd: Int32, what: String) throws(SystemError) {
        var on: Int32 = 1
        guard setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw SystemError.errno("setsockopt(SO_REUSEADDR)", what)
        }
    }

    /// The name of the user `uid` (getpwuid_r), or nil when it has none.
    public static func userName(_ uid: uid_t) -> String? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        let code = buffer.withUnsafeMutableBufferPointer { getpwuid_r(uid, &entry, $0.baseAddress!, $0.count, &found) }
        guard code == 0, found != nil, let name = entry.pw_name else { return nil }
        return String(cString: name)
    }

    /// Whether the user `name` exists (getpwnam_r).
    public static func userExists(_ name: String) -> Bool {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        let code = buffer.withUnsafeMutableBufferPointer { getpwnam_r(name, &entry, $0.baseAddress!, $0.count, &found) }
        return code == 0 && found != nil
    }

    /// A second name for the file at `existing` (link).
    public static func link(_ existing: String, _ new: String) throws(SystemError) {
        while Glibc.link(existing, new) != 0 {
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("link", "\(existing) → \(new)")
        }
    }

    /// Sets the extended attribute `name` of the file at `path` (setxattr);
    /// EOPNOTSUPP when its filesystem keeps none.
    public static func setAttribute(_ path: String, name: String, value: String) throws(SystemError) {
        let bytes = Array(value.utf8)
        while bytes.withUnsafeBytes({ obscura_set_attribute(path, name, $0.baseAddress, $0.count) }) != 0 {
            if Glibc.errno == EINTR { continue }
            throw SystemError.errno("setxattr \(name)", path)
        }
    }

    /// The names in the folder `path` (without "." and "..").
    public static func folderEntries(_ path: String) throws(SystemError) -> [String] {
        guard let folder = opendir(path) else { throw SystemError.errno("opendir", path) }
        defer { closedir(folder) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(folder) else {
                if errno != 0 { throw SystemError.errno("readdir", path) }
                return names
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != "." && name != ".." { names.append(name) }
        }
    }

    /// `path` with every symbolic link resolved (realpath).
    public static func resolvedPath(_ path: String) throws(SystemError) -> String {
        guard let resolved = realpath(path, nil) else { throw SystemError.errno("realpath", path) }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

/// Owns one file descriptor and closes it exactly once (never retried on
/// EINTR). Anything else holding the number only borrows it.
public final class OwnedFileDescriptor: Sendable {
    public let rawValue: Int32
    private let closed = Atomic<Bool>(false)

    public init(adopting fd: Int32) { rawValue = fd }

    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Syscalls.close(rawValue)
    }

    deinit { close() }
}

extension Syscalls {
    /// A duplicate of `fd` (close-on-exec) that the caller owns.
    public static func duplicate(_ fd: Int32) throws(SystemError) -> OwnedFileDescriptor {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw SystemError.errno("fcntl(F_DUPFD_CLOEXEC)", "fd \(fd)") }
        return OwnedFileDescriptor(adopting: copy)
    }
}

/// A read-only or read-write mapping of (part of) a descriptor, unmapped when
/// the last reference goes. It borrows the descriptor, which must outlive the
/// mmap call only (the kernel keeps the mapping alive on its own).
///
/// `@unchecked Sendable`: both stored properties are immutable `let`s; who
/// reads or writes the mapped memory synchronises that access themselves.
public final class MemoryMapping: @unchecked Sendable {
    public let base: UnsafeMutableRawPointer
    public let length: Int
    /// Mapped with PROT_WRITE.
    public let writable: Bool

    public init(fd: Int32, offset: Int, length: Int, writable: Bool = false) throws(SystemError) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        precondition(offset % page == 0, "mmap offsets must be page aligned")
        let protection = PROT_READ | (writable ? PROT_WRITE : 0)
        guard let pointer = mmap(nil, length, protection, MAP_SHARED, fd, off_t(offset)),
              pointer != MAP_FAILED else {
            throw SystemError.errno("mmap", "fd \(fd), offset \(offset), length \(length)")
        }
        base = pointer
        self.length = length
        self.writable = writable
    }

    deinit { munmap(base, length) }
}

import CSystem

extension Syscalls {
    /// Brackets CPU access to a dmabuf (DMA_BUF_IOCTL_SYNC), so caches are
    /// coherent with the device that wrote it.
    public static func dmabufSync(_ fd: Int32, start: Bool, write: Bool = false) throws(SystemError) {
        if obscura_dmabuf_sync(fd, start ? 1 : 0, write ? 1 : 0) != 0 {
            throw SystemError.errno("ioctl(DMA_BUF_IOCTL_SYNC)", "fd \(fd) \(start ? "start" : "end")")
        }
    }

    /// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID), ns.
    public static func threadCPUNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Seconds since boot, suspend included (CLOCK_BOOTTIME): the clock the
    /// kernel's own logs and uptime use.
    public static func bootSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Puts the calling thread in the round-robin real-time class at
    /// `priority` (1–99), ahead of every ordinary thread: for a thread whose
    /// data is lost when it is late (a capture device's ring). Needs root or
    /// CAP_SYS_NICE (or an RLIMIT_RTPRIO); without it the error says so.
    public static func makeCurrentThreadRealtime(priority: Int32) throws(SystemError) {
        var parameters = sched_param()
        parameters.sched_priority = priority
        let rc = pthread_setschedparam(pthread_self(), SCHED_RR, &parameters)
        guard rc == 0 else { throw SystemError(call: "pthread_setschedparam", code: rc, detail: "SCHED_RR \(priority)") }
    }

    /// CLOCK_MONOTONIC in nanoseconds (the clock of camera and GPIO timestamps).
    public static func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Device nodes this process holds open whose node has been removed (the
    /// device was unbound or unplugged while open: /proc shows the link as
    /// "PATH (deleted)"), among those whose path starts with one of
    /// `prefixes`.
    public static func vanishedOpenNodes(prefixes: [String]) -> [String] {
        guard let dir = opendir("/proc/self/fd") else { return [] }
        defer { closedir(dir) }
        var found: [String] = []
        var target = [CChar](repeating: 0, count: 4096)
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.first?.isNumber == true else { continue }
            let n = readlink("/proc/self/fd/" + name, &target, target.count - 1)
            guard n > 0 else { continue }
            let path = String(decoding: target[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if path.hasSuffix(" (deleted)"), prefixes.contains(where: { path.hasPrefix($0) }) { found.append(path) }
        }
        return found
    }

    /// An anonymous memory file (memfd), for buffers that behave like dmabufs.
    public static func memfd(_ name: String, size: Int) throws(SystemError) -> OwnedFileDescriptor {
        let fd = obscura_memfd(name)
        if fd < 0 { throw SystemError.errno("memfd_create", name) }
        let owned = OwnedFileDescriptor(adopting: fd)
        if ftruncate(fd, off_t(size)) != 0 { throw SystemError.errno("ftruncate", "\(name) to \(size) bytes") }
        return owned
    }
}

/// A connection accepted from listening socket `fd`, non-blocking and
/// close-on-exec from the start (so no child process inherits it); -1 with
/// errno when there is none (EAGAIN) or it failed.
public func acceptConnection(_ fd: Int32) -> Int32 { obscura_accept(fd) }
