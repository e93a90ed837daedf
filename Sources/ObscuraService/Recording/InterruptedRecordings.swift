import Foundation
import Logging
import ObscuraAge
import ObscuraMuxing
import ObscuraSystem
import ObscuraFiles

/// Files a killed process or a power cut left as `.partial` are fragmented
/// and playable up to their last fragment: they get their final names (and
/// checksums) so they are kept and can be fetched. Photos never finished are
/// dropped.
///
/// Everything here blocks (folder scans, renames, hashing whole files): it
/// runs on the calling thread, which is the storage's own (the SD card's
/// file thread, the USB drive's thread), never the service's actor, so a
/// storage that hangs holds up only its thread.
struct InterruptedRecordings: Sendable {
    let logger: Logger

    /// Recovers the `.partial` files in `incoming` and `recordings` into
    /// `recordings`.
    func recover(incoming: String, recordings: String) {
        for folder in [incoming, recordings] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            for name in names where name.hasSuffix(".partial") {
                recover(folder + "/" + name, into: recordings, finalName: String(name.dropLast(".partial".count)))
            }
        }
    }

    private func recover(_ partial: String, into recordings: String, finalName: String) {
        let ext = (finalName as NSString).pathExtension.lowercased()
        let final = recordings + "/" + finalName
        if ext == "age", !FileManager.default.fileExists(atPath: final) {
            return recoverEncrypted(partial, final: final)
        }
        guard ["mp4", "mov", "mkv"].contains(ext) else {
            return discard(partial, "an unfinished file of no kind that can be recovered")
        }
        guard !FileManager.default.fileExists(atPath: final) else { return }
        // A recording cut before its first frame reached the file is only a
        // header: it is not a recording, and goes.
        guard let held = MovieReader.countPackets(partial), held.video > 0 else {
            return discard(partial, "an interrupted recording with no frame in it")
        }
        keep(partial, as: final, "recovered an interrupted recording: \(final), \(held.video) frames")
    }

    /// A recovered file under its final name, synced with its folder, and
    /// its checksum written, before it is said: what is said recovered
    /// survives a power cut.
    private func keep(_ partial: String, as final: String, _ notice: String) {
        do {
            try Syscalls.syncAndPublish(partial, as: final)
        } catch {
            logger.error("cannot recover \(partial): \(error)")
            return
        }
        writeChecksum(final)
        logger.notice("\(notice)")
    }

    private func discard(_ partial: String, _ why: String) {
        do {
            try Syscalls.remove(partial)
            logger.warning("removed \(partial): \(why)")
        } catch {
            logger.error("cannot remove \(partial) (\(why)): \(error)")
        }
    }

    /// An encrypted recording cut off (killed, a power cut): the device has
    /// no key to read it, so it is kept as it is, cut back to its header and
    /// complete sealed chunks, under its final name with a checksum. It ends
    /// without age's last chunk: `obscura decrypt` (or `obscura pull
    /// --identity-file`) gives its complete chunks and says it was
    /// interrupted; `age -d` gives the same bytes and then reports the end
    /// missing. One with no complete chunk holds nothing and goes.
    private func recoverEncrypted(_ partial: String, final: String) {
        let kept: Int64?
        do {
            kept = try completeChunks(partial)
        } catch {
            logger.error("cannot recover \(partial): \(error)")
            return
        }
        guard let chunks = kept else {
            return discard(partial, "an interrupted encrypted recording with no complete chunk in it")
        }
        keep(partial, as: final, "recovered an interrupted encrypted recording: \(final), \(chunks) complete chunks (\(chunks * 64) KiB); it ends without its last chunk: `obscura decrypt` gives what it holds")
    }

    /// Cuts an encrypted file back to its complete chunks; how many, or nil
    /// when it has none.
    private func completeChunks(_ partial: String) throws -> Int64? {
        guard let header = AgeDecryptor.headerLength(of: partial),
              let size = (try? FileManager.default.attributesOfItem(atPath: partial)[.size] as? Int).map(Int64.init) else { return nil }
        let whole = AgeDecryptor.completeLength(headerAndNonce: header, fileSize: size)
        guard whole > Int64(header) else { return nil }
        if whole < size {
            let file = try Syscalls.open(partial, O_WRONLY)
            try Syscalls.truncate(file.rawValue, to: whole, path: partial)
        }
        return (whole - Int64(header)) / Int64(Age.sealedChunkSize)
    }

    /// A checksum for any finished file without one in `folders` (a cut
    /// between the rename and the checksum).
    func addMissingChecksums(_ folders: [String]) {
        for folder in folders {
            let names = Set((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
            for name in names where StorageKeeper.mediaExtensions.contains((name as NSString).pathExtension.lowercased())
                && !names.contains(name + ".sha256") {
                writeChecksum(folder + "/" + name)
            }
        }
    }

    private func writeChecksum(_ file: String) {
        do { try Checksum.write(for: file) } catch { logger.error("no checksum for \(file): \(error)") }
    }
}
