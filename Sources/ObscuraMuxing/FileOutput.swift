import CFFmpeg
import ObscuraFFmpeg
import Dispatch
import Foundation
import ObscuraAge
import ObscuraSystem
#if canImport(Glibc)
import Glibc
#endif
import ObscuraFiles

/// The movie file as libavformat sees it: an AVIOContext whose writes go to
/// one descriptor this object owns (pwrite at the muxer's position) and are
/// hashed as they are written. The hash holds while the file only grows;
/// a write anywhere but the end (a muxer patching a header) voids it, and
/// the finished file is read again instead. So a finished MP4/MOV has its
/// checksum at once, with no second pass over a file that may be gigabytes
/// on a slow card.
final class FileOutput {
    let path: String
    private let fd: OwnedFileDescriptor
    private(set) var context: UnsafeMutablePointer<AVIOContext>?
    private var position: Int64 = 0
    private(set) var size: Int64 = 0
    private var hash: SHA256? = SHA256()
    private var hashed: Int64 = 0
    /// The first write that failed (the file may end torn after it).
    private(set) var error: SystemError?

    /// Encrypting: plaintext the muxer wrote since the last `commit`.
    private var pending: [UInt8] = []
    private let encryptor: AgeEncryptor?
    /// Encrypting: the file's real size (header and sealed chunks), and how
    /// much of it is whole (a write that failed part-way tears the rest).
    private var cipherSize: Int64 = 0
    private var cipherWhole: Int64 = 0

    /// Encrypting with fragments aligned to age's chunks: the container's
    /// filler (see `alignToChunk`).
    private let filler: ChunkFiller?

    /// `encryptor`: the file is an age file (the muxer's output, sealed
    /// chunk by chunk as fragments complete); the muxer sees a file it
    /// cannot seek in, so it writes only forwards. `filler`: whole fragments
    /// are aligned to age's chunks with it (`alignToChunk`).
    init(path: String, encryptor: AgeEncryptor? = nil, filler: ChunkFiller? = nil) throws {
        self.path = path
        self.encryptor = encryptor
        self.filler = encryptor == nil ? nil : filler
        fd = try Syscalls.open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o666)
        let bufferSize: Int32 = 64 << 10
        guard let buffer = av_malloc(Int(bufferSize))?.assumingMemoryBound(to: UInt8.self) else {
            throw FFmpegError(call: "av_malloc", code: obscura_averror(ENOMEM))
        }
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        // The closures take the buffer as FFmpeg declares it (mutable before
        // FFmpeg 6.1, const after): both read it the same way.
        context = avio_alloc_context(buffer, bufferSize, 1, opaque, nil, { opaque, bytes, count in
            let output = Unmanaged<FileOutput>.fromOpaque(opaque!).takeUnretainedValue()
            return output.write(UnsafeRawPointer(bytes!), Int(count))
        }, { opaque, offset, whence in
            Unmanaged<FileOutput>.fromOpaque(opaque!).takeUnretainedValue().seek(offset, whence)
        })
        guard context != nil else {
            av_free(buffer)
            throw FFmpegError(call: "avio_alloc_context", code: obscura_averror(ENOMEM))
        }
        if let encryptor {
            context!.pointee.seekable = 0
            writeSealed(encryptor.header)
            if let error { throw error }
        }
    }

    /// Whether what is written is encrypted (an age file).
    var encrypted: Bool { encryptor != nil }

    /// Encrypting: plaintext in the cipher, not yet sealed into a chunk.
    var heldPlaintext: Int { encryptor?.heldBytes ?? 0 }

    /// The bytes in the file on the storage: the container's (plain), or the
    /// age file's header and sealed chunks (encrypted).
    var bytesInFile: Int64 { encryptor != nil ? cipherSize : size }

    private func write(_ bytes: UnsafeRawPointer, _ count: Int) -> Int32 {
        if encryptor != nil {
            // Held in memory until the muxer has made a whole fragment of it.
            pending.append(contentsOf: UnsafeRawBufferPointer(start: bytes, count: count))
            position += Int64(count)
            size = max(size, position)
            return Int32(count)
        }
        return writePlain(bytes, count)
    }

    /// Encrypting: what the muxer wrote so far is whole (a fragment, a
    /// cluster, the header), so it goes into the cipher; the chunks that
    /// completes are written. Plaintext never reaches the file.
    func commit() {
        guard let encryptor, !pending.isEmpty, error == nil else { return }
        let sealed = pending.withUnsafeBytes { encryptor.update($0) }
        pending.removeAll(keepingCapacity: true)
        writeSealed(sealed)
    }

    /// Encrypting, with a filler: what the muxer handed over so far is whole
    /// (fragments); filler is written after it, through the muxer's own I/O
    /// context (so offsets the muxer keeps, like MP4's `mfra`, count it), up
    /// to the end of age's chunk, and that chunk is sealed at once. The file
    /// then ends where the last whole fragment (and its filler) ends: cut off
    /// here, `age -d` gives whole fragments only. Returns the filler's size.
    @discardableResult
    func alignToChunk() -> Int {
        guard let encryptor, let filler, let context, error == nil else { return 0 }
        commit()
        var count = (Age.chunkSize - Int(size % Int64(Age.chunkSize))) % Age.chunkSize
        if count > 0 && count < filler.minimum { count += Age.chunkSize }
        if count > 0 {
            let bytes = filler.bytes(count)
            bytes.withUnsafeBufferPointer { avio_write(context, $0.baseAddress, Int32(count)) }
            avio_flush(context)
            commit()
        }
        writeSealed(encryptor.sealWholeHeldChunk())
        return count
    }

    /// Encrypting: the last chunk must hold plaintext; after an aligned end
    /// none is held, so a filler of the least size is added (past the
    /// trailer: the I/O context is closed by then).
    private func plaintextForTheLastChunk() {
        guard let encryptor, encryptor.finishNeedsPlaintext, let filler else { return }
        writeSealed(encryptor.update(filler.bytes(filler.minimum)))
    }

    /// Sealed bytes held back while `atOnce` runs.
    private var heldSealed: [UInt8]?

    /// Runs `body` (a commit and the chunk alignment that ends a fragment)
    /// and writes what it sealed with one call, not a call per step: a kill
    /// then finds the fragment's chunks in the file all or none, unless it
    /// cuts that one write itself.
    func atOnce(_ body: () -> Void) {
        heldSealed = []
        body()
        let held = heldSealed ?? []
        heldSealed = nil
        writeSealed(held)
    }

    /// Appends sealed bytes to the file (hashing them).
    private func writeSealed(_ bytes: [UInt8]) {
        guard !bytes.isEmpty, error == nil else { return }
        if heldSealed != nil {
            heldSealed!.append(contentsOf: bytes)
            return
        }
        var done = 0
        let written = bytes.withUnsafeBytes { b in
            Result { () throws(SystemError) in
                try Syscalls.pwriteAll(fd.rawValue, b.baseAddress!, count: b.count, at: cipherSize, path: path, written: &done)
            }
        }
        if case .failure(let failure) = written {
            error = failure
            cipherSize += Int64(done)
            return
        }
        hash?.update(bytes)
        hashed += Int64(bytes.count)
        cipherSize += Int64(bytes.count)
        cipherWhole = cipherSize
    }

    private func writePlain(_ bytes: UnsafeRawPointer, _ count: Int) -> Int32 {
        var done = 0
        do throws(SystemError) {
            try Syscalls.pwriteAll(fd.rawValue, bytes, count: count, at: position, path: path, written: &done)
        } catch {
            // Part of this write may be in the file: what it holds is read
            // back at the end instead.
            if self.error == nil { self.error = error }
            hash = nil
            if done > 0 { size = max(size, position + Int64(done)) }
            return obscura_averror(error.code)
        }
        if let hash {
            if position == hashed {
                hash.update(UnsafeRawBufferPointer(start: bytes, count: count))
                hashed += Int64(count)
            } else {
                self.hash = nil
            }
        }
        position += Int64(count)
        size = max(size, position)
        return Int32(count)
    }

    private func seek(_ offset: Int64, _ whence: Int32) -> Int64 {
        if whence & AVSEEK_SIZE != 0 { return encryptor != nil ? Int64(obscura_averror(ESPIPE)) : size }
        if encryptor != nil {
            // Sealed chunks cannot be rewritten: only a seek to where it is.
            let here = (whence & ~AVSEEK_FORCE == SEEK_CUR && offset == 0) || (whence & ~AVSEEK_FORCE == SEEK_SET && offset == position)
            return here ? position : Int64(obscura_averror(ESPIPE))
        }
        let target: Int64
        switch whence & ~AVSEEK_FORCE {
        case SEEK_SET: target = offset
        case SEEK_CUR: target = position + offset
        case SEEK_END: target = size + offset
        default: return Int64(obscura_averror(EINVAL))
        }
        guard target >= 0 else { return Int64(obscura_averror(EINVAL)) }
        position = target
        return target
    }

    /// Flushes what the muxer holds, fsyncs and closes the file. Returns the
    /// SHA-256 of everything written when it was all written in order.
    /// On failure the descriptor stays open, for `abandon`.
    func finish() throws(SystemError) -> String? {
        closeContext()
        if let encryptor, error == nil {
            commit()
            plaintextForTheLastChunk()
            writeSealed(encryptor.finish())
        }
        if let error { throw error }
        try Syscalls.fsync(fd.rawValue, path: path)
        fd.close()
        guard let hash, hashed == (encryptor != nil ? cipherSize : size) else { return nil }
        return SHA256.hex(hash.finalize())
    }

    /// Ends the file after a failed write: what the I/O context still
    /// buffers is dropped, the file is cut to `length` bytes (a torn tail
    /// removed), synced and closed. Returns the SHA-256 of those bytes when
    /// they were all hashed in order (nil: read the file).
    func abandon(keeping length: Int64) throws(SystemError) -> String? {
        if context != nil {
            av_freep(&context!.pointee.buffer)
            avio_context_free(&context)
        }
        defer { fd.close() }
        if let encryptor {
            // What was committed is whole fragments (`length`): sealed as the
            // file's end when every chunk before it reached the file; after
            // a torn write, the file is cut to its whole chunks and ends
            // without its last one (its complete chunks decrypt).
            pending.removeAll()
            if error == nil {
                plaintextForTheLastChunk()
                writeSealed(encryptor.finish())
            }
            if cipherWhole < cipherSize || error != nil {
                let whole = AgeDecryptor.completeLength(headerAndNonce: encryptor.header.count, fileSize: cipherWhole)
                try Syscalls.truncate(fd.rawValue, to: whole, path: path)
                cipherSize = whole
                hash = nil
            }
            try Syscalls.fsync(fd.rawValue, path: path)
            guard let hash, hashed == cipherSize else { return nil }
            return SHA256.hex(hash.finalize())
        }
        if length < size {
            try Syscalls.truncate(fd.rawValue, to: length, path: path)
            size = length
        }
        try Syscalls.fsync(fd.rawValue, path: path)
        guard let hash, hashed == size else { return nil }
        return SHA256.hex(hash.finalize())
    }

    /// Flushes and frees the I/O context; the descriptor stays open.
    private func closeContext() {
        guard context != nil else { return }
        avio_flush(context)
        av_freep(&context!.pointee.buffer)
        avio_context_free(&context)
    }

    deinit { closeContext() }
}
