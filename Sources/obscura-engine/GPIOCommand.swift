import ArgumentParser
import ObscuraCommandLine
import Foundation
import ObscuraSystem
import ObscuraGPIO

struct GPIOCommand: AsyncParsableCommand {
    static let configuration = CommandDescriptions.gpio.with(subcommands: [Watch.self, Set.self, ButtonCommand.self])

    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print edges on an input line.")
        @Option(help: "The chip's label (or gpiochipN name).") var chip: String
        @Option(help: "The line's name.") var line: String
        @Option(help: "Stop after this many edges.") var count: Int = 1
        @Option(help: "Give up after this many seconds.") var timeout: Double = 10
        @Option(help: "Bias: as-is, disabled, pull-up, pull-down.") var bias: String = "as-is"

        func validate() throws {
            try Options.check {
                try Limits.count.check(count, "--count")
                try Limits.runSeconds.check(timeout, "--timeout")
                try Options.choice(bias, ["as-is", "disabled", "pull-up", "pull-down"], "--bias")
            }
        }

        func run() async throws {
            try await Self.reporting {
                let biasValue: GPIOBias = switch bias {
                case "pull-up": .pullUp
                case "pull-down": .pullDown
                case "disabled": .disabled
                case "as-is": .asIs
                default: throw UserFacingError("unknown bias \"\(bias)\"; allowed: as-is, disabled, pull-up, pull-down")
                }
                let input = try GPIOLine.input(GPIOLineName(chip: chip, line: line), edges: .both, bias: biasValue)
                defer { input.release() }
                Log.output("ready \(input.name) libgpiod-v\(GPIOLine.libgpiodAPIVersion) value=\(try input.value() ? 1 : 0)")
                let deadline = ContinuousClock.now + .checkedSeconds(timeout)
                var seen = 0
                while seen < count {
                    let left = deadline - ContinuousClock.now
                    guard left > .zero else { throw UserFacingError("timed out after \(timeout) s with \(seen) of \(count) edges on \(input.name)") }
                    for edge in try input.waitForEdges(timeout: left) where seen < count {
                        seen += 1
                        Log.output("edge \(edge.kind == .rising ? "rising" : "falling") \(edge.timestampNanoseconds)")
                    }
                }
            }
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Drive an output line, hold it, then release it.")
        @Option(help: "The chip's label (or gpiochipN name).") var chip: String
        @Option(help: "The line's name.") var line: String
        @Argument(help: "1 or 0.") var value: Int
        @Option(help: "Seconds to hold the value before releasing the line.") var hold: Double = 0

        func validate() throws {
            try Options.check {
                try Limits.holdSeconds.check(hold, "--hold")
                guard value == 0 || value == 1 else { throw UserFacingError("value: \(value) is not allowed; allowed: 0, 1") }
            }
        }

        func run() async throws {
            try await Self.reporting {
                guard value == 0 || value == 1 else { throw UserFacingError("value must be 0 or 1, not \(value)") }
                let output = try GPIOLine.output(GPIOLineName(chip: chip, line: line), initialValue: value == 1)
                if hold > 0 { try await Task.sleep(for: .checkedSeconds(hold)) }
                output.release()
            }
        }
    }

    struct ButtonCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "button", abstract: "Print debounced presses of a button (short and long).")
        @Option(help: "The chip's label (or gpiochipN name).") var chip: String
        @Option(help: "The line's name.") var line: String
        @Option(help: "Stop after this many presses.") var count: Int = 1
        @Option(help: "Give up after this many seconds.") var timeout: Double = 30
        @Option(help: "Debounce period in milliseconds.") var debounce: Int = 20
        @Option(help: "Hold time of a long press, in milliseconds.") var longPress: Int = 1000
        @Flag(help: "The button pulls the line low when pressed.") var activeLow = false

        func validate() throws {
            try Options.check {
                try Limits.count.check(count, "--count")
                try Limits.runSeconds.check(timeout, "--timeout")
                try Limits.debounceMilliseconds.check(debounce, "--debounce")
                try Limits.longPressMilliseconds.check(longPress, "--long-press")
            }
        }

        func run() async throws {
            try await Self.reporting {
                let button = try Button(GPIOLineName(chip: chip, line: line), activeLow: activeLow, bias: .asIs,
                                        debounce: .milliseconds(debounce), longPress: .milliseconds(longPress))
                defer { button.close() }
                Log.output("ready \(button.name) libgpiod-v\(GPIOLine.libgpiodAPIVersion) debounced-by=\(button.isKernelDebounced ? "kernel" : "software")")
                let deadline = ContinuousClock.now + .checkedSeconds(timeout)
                var presses = 0
                let timer = Task {
                    try await Task.sleep(until: deadline)
                    button.close()
                }
                defer { timer.cancel() }
                var long = false
                for await event in button.events {
                    var pressDone = false
                    switch event {
                    case .pressed(let t):
                        presses += 1
                        long = false
                        Log.output("press \(presses) \(t)")
                    case .released(_, let held):
                        Log.output("release held=\(held)")
                        pressDone = long  // a short press reports itself next
                    case .shortPress:
                        Log.output("short press")
                        pressDone = true
                    case .longPress:
                        long = true
                        Log.output("long press")
                    }
                    if presses >= count, pressDone { break }
                }
                if presses < count { throw UserFacingError("timed out after \(timeout) s with \(presses) of \(count) presses") }
            }
        }
    }
}
