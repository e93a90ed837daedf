import ArgumentParser
import ObscuraCommandLine
import Dispatch
import Foundation
import Logging
import ObscuraService

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.run

    @Option(help: "Configuration file (default /etc/obscura/obscura.toml when it exists).") var config: String?
    @Option(help: "Board profile name or path, overriding the configuration's.") var board: String?

    func run() async throws {
        Log.keepGoingWithoutReaders()
        try await Self.reporting {
            var configuration = try ServiceConfiguration.load(config)
            if let board { configuration.board = board }
            let profile = try BoardProfile.load(configuration.board, from: configuration.file)
            if let cost = profile.cost(of: configuration), !cost.fits, cost.budget.enforced {
                throw ValidationError("\(configuration.file): \(cost.refusal)")
            }
            let logger = Logger(label: "obscura") { _ in JournalLogHandler() }
            // One camera (the profile's) or several ([cameras.NAME]).
            let service: any KioskService = configuration.cameras.isEmpty
                ? try RecorderService(configuration: configuration, profile: profile, logger: logger)
                : try Kiosk(configuration: configuration, profile: profile, logger: logger)
            try await service.start()
            let (signals, continuation) = AsyncStream<Int32>.makeStream()
            var sources: [any DispatchSourceSignal] = []
            for signal in [SIGTERM, SIGINT, SIGUSR1] {
                Foundation.signal(signal, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
                source.setEventHandler { continuation.yield(signal) }
                source.resume()
                sources.append(source)
            }
            for await signal in signals {
                if signal == SIGUSR1 {
                    await service.toggleRecording()
                    continue
                }
                Log.note("signal \(signal): stopping")
                await service.shutdown()
                break
            }
            sources.forEach { $0.cancel() }
        }
    }
}
