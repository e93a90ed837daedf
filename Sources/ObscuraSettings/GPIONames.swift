/// A GPIO line named by its chip's label and its own name — never by number,
/// since boards renumber their chips (Pi 5 moved its header from gpiochip4 to
/// gpiochip0).
public struct GPIOLineName: Sendable, Hashable, CustomStringConvertible {
    public let chip: String
    public let line: String
    public init(chip: String, line: String) {
        self.chip = chip
        self.line = line
    }
    public var description: String { "\(chip)/\(line)" }
}

/// How an input line is biased (libgpiod's values).
public enum GPIOBias: Int32, Sendable { case asIs = 0, disabled = 1, pullUp = 2, pullDown = 3 }
