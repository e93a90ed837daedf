import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif

/// A small file written whole or not at all: a checksum, a photo, the
/// metrics, a key list.
public enum DurableFile {
    /// Writes `bytes` to `temporary`, fsyncs it, renames it to `path` and
    /// syncs the folder (`Syscalls.publish`), so `path` is either absent, the
    /// old file, or the whole new one, and once this returns it stays so
    /// through a power cut. The
    /// temporary must be on `path`'s filesystem; it is removed on failure.
    /// `sync: false` keeps the atomic replacement without either fsync (a
    /// file on tmpfs, or one that is rewritten every few seconds anyway).
    public static func write(_ bytes: some Collection<UInt8>, to path: String, via temporary: String,
                             mode: mode_t = 0o644, sync: Bool = true) throws(SystemError) {
        do throws(SystemError) {
            let fd = try Syscalls.open(temporary, O_WRONLY | O_CREAT | O_TRUNC, mode)
            try Syscalls.writeAll(fd.rawValue, bytes, path: temporary)
            try Syscalls.setMode(fd.rawValue, mode, path: temporary)
            if sync { try Syscalls.fsync(fd.rawValue, path: temporary) }
            fd.close()
            if sync {
                try Syscalls.publish(temporary, as: path)
            } else {
                try Syscalls.rename(temporary, path)
            }
        } catch {
            try? Syscalls.remove(temporary)  // (the write's own error is the one to say)
            throw error
        }
    }
}
