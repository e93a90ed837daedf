import ObscuraMedia

/// What does not fit, what would, and the prediction as `obscura config
/// --check` and the service's refusal print it.
extension HardwareCost {
    static let sizes = [(3840, 2160), (2560, 1440), (1920, 1080), (1280, 720), (960, 540), (640, 480), (320, 240)]
        .map { PixelSize(width: $0.0, height: $0.1) }
    static let rates: [Double] = [60, 50, 30, 25, 24, 20, 15, 10, 5]

    /// Each budget the prediction is over, in words.
    public var overages: [String] {
        var out: [String] = []
        if cores > budget.cores {
            out.append("CPU: \(Self.fixed(cores)) cores of the \(Self.fixed(budget.cores)) the board gives the recorder")
        }
        if encoderShare > 1 {
            out.append("the hardware encoder: \(Self.mega(encoderShare * budget.encoderPixelRate)) Mpixel/s of its \(Self.mega(budget.encoderPixelRate))")
        }
        if memoryBytes > budget.bufferMemoryBytes {
            out.append("buffer memory: \(memoryBytes >> 20) MiB of the \(budget.bufferMemoryBytes >> 20) MiB the board has for them")
        }
        return out
    }

    /// The prediction, a line per camera and one for the total.
    public var lines: [String] {
        let hardware = budget.encoderPixelRate > 0
        var out = cameras.map { c in
            (c.name.isEmpty ? "the camera" : "camera \(c.name)") + ": \(c.encoder), " + (c.unknown.map { "\($0); " } ?? "")
                + "\(Self.fixed(c.cores)) cores, " + (hardware ? "\(Self.percent(c.encoderShare)) of the hardware encoder, " : "")
                + "\(c.memoryBytes >> 20) MiB of buffers"
        }
        out.append("total: cost \(Self.fixed(cost)) (1.00 is all the board has): \(Self.fixed(cores)) of \(Self.fixed(budget.cores)) cores, "
                   + (hardware ? "\(Self.percent(encoderShare)) of the hardware encoder, " : "no hardware encoder, ")
                   + "\(memoryBytes >> 20) of \(budget.bufferMemoryBytes >> 20) MiB of buffers")
        return out
    }

    /// The refusal: what does not fit and what would.
    public var refusal: String {
        "over the board's budget (cost \(Self.fixed(cost))): " + overages.joined(separator: "; ")
            + (remedies.isEmpty ? "" : ". Would fit: " + remedies.joined(separator: "; or "))
    }

    static func remedies(_ demands: [CameraDemand], _ predicted: [Camera], _ b: HardwareBudget) -> [String] {
        func fits(_ ds: [CameraDemand]) -> Bool { HardwareCost(ds, budget: b, remedies: false).fits }
        var out: [String] = []
        if let largest = demands.map(\.size).max(),
           let size = sizes.first(where: { s in s < largest && fits(demands.map { var d = $0; d.size = min(d.size, s); return d }) }) {
            out.append(demands.count > 1 ? "every camera at \(size)" : "\(size)")
        }
        if let fastest = demands.map(\.frameRate).max(),
           let rate = rates.first(where: { r in r < fastest && fits(demands.map { var d = $0; d.frameRate = min(d.frameRate, r); return d }) }) {
            out.append("\(fixed(rate, digits: 0)) frames a second")
        }
        for (i, c) in predicted.enumerated() where c.encoder != "v4l2m2m" && hardwareTakes(demands[i], b) {
            var moved = demands
            moved[i].encoders = ["v4l2m2m"] + moved[i].encoders.filter { $0 != "v4l2m2m" }
            if fits(moved) { out.append("\(Self.named(c.name)) on the hardware encoder (v4l2m2m)"); break }
        }
        for (i, c) in predicted.enumerated() where c.encoder == "v4l2m2m" {
            var moved = demands
            moved[i].encoders = moved[i].encoders.filter { $0 != "v4l2m2m" }
            if moved[i].encoders.isEmpty { moved[i].encoders = [softwareEncoder(moved[i].codec)] }
            if fits(moved) { out.append("\(Self.named(c.name)) in software (\(softwareEncoder(moved[i].codec)))"); break }
        }
        // Fewer cameras: the last named go first.
        if let kept = (1..<max(1, demands.count)).reversed().first(where: { fits(Array(demands.prefix($0))) }) {
            let dropped = demands.dropFirst(kept).map(\.name)
            out.append("without camera\(dropped.count > 1 ? "s" : "") \(dropped.joined(separator: ", "))")
        }
        return out
    }

    static func fixed(_ v: Double, digits: Int = 2) -> String {
        let scale = digits == 0 ? 1.0 : digits == 1 ? 10.0 : 100.0
        let n = Int((v * scale).rounded())
        guard digits > 0 else { return String(n) }
        let whole = n / Int(scale), part = String(n % Int(scale))
        return "\(whole)." + String(repeating: "0", count: digits - part.count) + part
    }
    static func named(_ name: String) -> String { name.isEmpty ? "the camera" : "camera \(name)" }
    static func percent(_ share: Double) -> String { "\(Int((share * 100).rounded())) %" }
    static func mega(_ rate: Double) -> String { fixed(rate / 1e6, digits: 1) }
}
