/// What this camera usually sees, learned from its own pictures and slowly
/// updated (daylight changes): the grid's layout (its points' gradients,
/// across and down) and its fine detail (pixel-scale differences at each
/// point). A look is judged against it, never against an absolute level
/// that a sensor's noise or an auto-exposure could cross.
///
/// Layout is compared as a direction (cosine of the two gradient fields),
/// so a brighter or darker picture, or one with more or less contrast, is
/// the same scene; contrast is compared cell by cell, as a ratio; fine
/// detail as a ratio too, relative to the contrast, so that dusk (less of
/// both) is not a lens gone soft.
public struct SceneReference: Sendable, Codable, Equatable {
    public let columns: Int
    public let rows: Int
    /// The slow mean of the grid's points and of their fine detail.
    public private(set) var points: [Double]
    public private(set) var fine: [Double]
    /// Looks learned from, capped at `memory` (the mean's reach).
    public private(set) var looks: Int
    /// The slow mean of the looks' own gradient energy: a scene whose mean
    /// keeps little of it (everything in it moves) has nothing lasting to
    /// be judged against.
    public private(set) var lookEnergy: Double

    /// How many looks the mean reaches back (at 5 looks a second: 2 minutes).
    public static let memory = 600

    public init(columns: Int, rows: Int) {
        self.columns = columns
        self.rows = rows
        points = [Double](repeating: 0, count: columns * rows)
        fine = points
        looks = 0
        lookEnergy = 0
    }

    /// Whether a decoded reference is one this grid can use (its arrays as
    /// long as its grid, its values finite).
    public var isWhole: Bool {
        columns >= 2 && rows >= 2 && points.count == columns * rows && fine.count == points.count && looks >= 0
            && points.allSatisfy(\.isFinite) && fine.allSatisfy(\.isFinite) && lookEnergy.isFinite
    }

    /// Learns from a look (its short-term mean grid and fine detail).
    public mutating func learn(points new: [Double], fine newFine: [Double]) {
        guard new.count == points.count, newFine.count == fine.count else { return }
        looks = min(looks + 1, Self.memory)
        let weight = 1.0 / Double(looks)
        for i in points.indices {
            points[i] += (new[i] - points[i]) * weight
            fine[i] += (newFine[i] - fine[i]) * weight
        }
        let g = Gradients.of(new, columns: columns)
        lookEnergy += (g.reduce(0) { $0 + $1 * $1 } - lookEnergy) * weight
    }

    /// The reference's structure, for comparing looks against (made again
    /// as the reference learns: it changes slowly).
    public func structure() -> SceneStructure { SceneStructure(self) }
}

/// A reference's gradients and the cells where it has structure (the upper
/// half of its gradient magnitudes), kept so that a look's comparison
/// neither allocates nor sorts the reference again.
public struct SceneStructure: Sendable {
    let columns: Int
    let gradients: [Double]
    let energy: Double
    /// Whether the scene has lasting structure: its mean keeps at least a
    /// quarter of its looks' gradient energy (a scene where everything
    /// moves, or a screen, averages to nothing and is not judged).
    public let isSteady: Bool
    /// The structured cells, with their gradient magnitude and fine detail.
    let cells: [Int]
    let columnOf: [Int]
    let magnitudes: [Double]
    let fine: [Double]

    init(_ reference: SceneReference) {
        columns = reference.columns
        let g = Gradients.of(reference.points, columns: columns)
        gradients = g
        energy = g.reduce(0) { $0 + $1 * $1 }
        isSteady = energy > 0 && energy >= 0.25 * reference.lookEnergy
        let magnitude = (0..<reference.points.count).map { i -> Double in
            let (x, y) = (g[2 * i], g[2 * i + 1])
            return (x * x + y * y).squareRoot()
        }
        let structured = magnitude.sorted()[magnitude.count / 2]
        let chosen = magnitude.indices.filter { magnitude[$0] > 0 && magnitude[$0] >= structured }
        cells = chosen
        columnOf = chosen.map { $0 % reference.columns }
        magnitudes = chosen.map { magnitude[$0] }
        fine = chosen.map { reference.fine[$0] }
    }

    /// A look (its points and fine detail, as long as the reference's)
    /// against the reference. `noise`: the variance of the sensor's noise
    /// left in each point; the contrast it makes is not the scene's.
    /// `scratch` is reused from look to look.
    public func compare(points look: [Double], fine lookFine: [Double], noise: Double = 0, scratch: inout [Double]) -> SceneComparison {
        var dot = 0.0, seenEnergy = 0.0
        let rows = look.count / columns
        look.withUnsafeBufferPointer { p in
            gradients.withUnsafeBufferPointer { r in
                // Row by row (no division per point): across, then down.
                for row in 0..<rows {
                    let first = row * columns
                    for i in first..<(first + columns) {
                        let gx = i + 1 < first + columns ? p[i + 1] - p[i] : 0
                        let gy = row + 1 < rows ? p[i + columns] - p[i] : 0
                        dot += r[2 * i] * gx + r[2 * i + 1] * gy
                        seenEnergy += gx * gx + gy * gy
                    }
                }
            }
        }
        let layout = energy > 0 && seenEnergy > 0 ? dot / (energy * seenEnergy).squareRoot() : 0
        // Each gradient is the difference of two noisy points: 2 × the noise's variance, expected.
        let noiseEnergy = Double((columns - 1) * rows + columns * (rows - 1)) * 2 * noise
        let contrast = energy > 0 ? (max(0, seenEnergy - noiseEnergy) / energy).squareRoot() : 1
        let n = cells.count
        guard n > 0 else { return SceneComparison(layout: layout, contrast: contrast, lostShare: 0, sharpness: 1) }
        if scratch.count < 2 * n { scratch = [Double](repeating: 0, count: 2 * n) }
        var fineCount = 0
        scratch.withUnsafeMutableBufferPointer { s in
            for k in 0..<n {
                let i = cells[k], column = columnOf[k]
                let gx = column + 1 < columns ? look[i + 1] - look[i] : 0
                let gy = i + columns < look.count ? look[i + columns] - look[i] : 0
                s[k] = (gx * gx + gy * gy).squareRoot() / magnitudes[k]
                if fine[k] > 0 { s[n + fineCount] = lookFine[i] / fine[k]; fineCount += 1 }
            }
        }
        return scratch.withUnsafeMutableBufferPointer { s in
            let ratios = UnsafeMutableBufferPointer(rebasing: s[0..<n])
            // Lost: a cell keeping under 40 % of what the frame's best-kept tenth keeps.
            let kept = Selection.nth(min(n - 1, n * 9 / 10), of: ratios)
            var lostCells = 0
            for r in ratios where r < 0.4 * kept { lostCells += 1 }
            let lost = kept > 0 ? Double(lostCells) / Double(n) : 0
            let medianRatio = Selection.nth(n / 2, of: ratios)
            let fines = UnsafeMutableBufferPointer(rebasing: s[n..<(n + fineCount)])
            let medianFine = fineCount == 0 ? 1 : Selection.nth(fineCount / 2, of: fines)
            let sharpness = medianRatio > 0 ? medianFine / max(medianRatio, 0.05) : 0
            return SceneComparison(layout: layout, contrast: contrast, lostShare: lost, sharpness: min(sharpness, 10))
        }
    }
}

/// A grid's gradients, across and down for each point (0 past the edge).
enum Gradients {
    static func of(_ p: [Double], columns: Int) -> [Double] {
        var g = [Double](repeating: 0, count: 2 * p.count)
        for i in p.indices {
            if (i + 1) % columns != 0 { g[2 * i] = p[i + 1] - p[i] }
            if i + columns < p.count { g[2 * i + 1] = p[i + columns] - p[i] }
        }
        return g
    }
}

/// The k-th smallest of a buffer (Hoare's selection, in place: the buffer
/// is reordered), in linear time on average.
enum Selection {
    static func nth(_ k: Int, of values: UnsafeMutableBufferPointer<Double>) -> Double {
        var low = 0, high = values.count - 1
        while low < high {
            let pivot = values[(low + high) / 2]
            var i = low, j = high
            while i <= j {
                while values[i] < pivot { i += 1 }
                while values[j] > pivot { j -= 1 }
                if i <= j { values.swapAt(i, j); i += 1; j -= 1 }
            }
            if k <= j { high = j } else if k >= i { low = i } else { break }
        }
        return values[k]
    }
}

/// A look against the scene's reference.
public struct SceneComparison: Sendable, Equatable {
    /// The layout's likeness: the cosine of the two gradient fields (1: the
    /// same scene, whatever its brightness; about 0: none of it).
    public let layout: Double
    /// The picture's contrast against the reference's (1: as usual).
    public let contrast: Double
    /// The share of the reference's structured cells that lost most of
    /// their contrast while others kept theirs (a cover or spray over part
    /// of the lens).
    public let lostShare: Double
    /// Fine detail against the reference's, relative to the contrast (1: as
    /// sharp as usual; a lens out of focus or fogged: well under).
    public let sharpness: Double
}
