import Foundation
import Logging
import ObscuraRecording

/// The coordinator's live view: the socket the SSH server's view account
/// reaches (`LiveServer`), and the encoder kept running for viewers while
/// nothing is recorded. While a recording runs, viewers get its packets;
/// while idle, the movie output encodes for them alone (its pre-record
/// path with the shortest buffer, no file) and stops when the last leaves.
extension RecorderService {
    func startLive() {
        guard !configuration.liveSocket.isEmpty else { return }
        let logger = logger
        do {
            live = try LiveServer(path: configuration.liveSocket, feed: liveFeed, codec: configuration.codec.rawValue) { [weak self] change in
                change.journal(logger)
                Task { await self?.viewersChanged() }
            }
            if let note = live?.accessNote { logger.warning("live view: \(note)") }
        } catch {
            // The recorder goes on without it; the status says why.
            logger.error("live view: cannot serve on \(configuration.liveSocket): \(error)")
            noteError("live view: \(error)", reason: .recording)
        }
    }

    /// Keeps the encoder running while someone watches and nothing records.
    func viewersChanged() {
        guard let open = camera.open, !stopping else { return }
        let opened = open.opened, watched = liveFeed.hasViewers
        if watched, !open.encodingForViewers, !opened.movie.isPreRecording {
            do {
                try opened.movie.armPreRecording(duration: .seconds(1), byteLimit: 1 << 20,
                                                 settings: setup.movieSettings(opened.device, frameRate: opened.frameRate))
                camera.update { $0.encodingForViewers = true }
            } catch {
                logger.warning("live view: cannot start the encoder for the viewers: \(error)")
            }
        } else if !watched, open.encodingForViewers {
            opened.movie.disarmPreRecording()
            camera.update { $0.encodingForViewers = false }
        }
    }
}

extension LiveServer.ViewerChange {
    /// A view's start and end in the journal, naming who watched.
    func journal(_ logger: Logger) {
        switch self {
        case .came(let name):
            logger.notice("live view started: \(name)")
        case .went(let name, let counts):
            logger.notice("live view ended: \(name) (\(counts.viewers) still watching)")
        case .refused(let name, let why):
            logger.warning("live view refused: \(name): \(why)")
        }
    }
}
