import XCTest
@testable import Torch

final class ProgressBarTests: XCTestCase {
    func testFormatMeterLikeTqdm() {
        XCTAssertEqual(ProgressBar<[Int]>.formatMeter(n: 5, total: 10, elapsed: 2, description: "epoch 1", barWidth: 10),
                       "epoch 1:  50%|█████     | 5/10 [00:02<00:02, 2.50it/s]")
        XCTAssertEqual(ProgressBar<[Int]>.formatMeter(n: 3, total: 12, elapsed: 6, postfix: "loss=0.5000", barWidth: 0),
                       " 25% 3/12 [00:06<00:18, 2.00s/it, loss=0.5000]")
        XCTAssertEqual(ProgressBar<[Int]>.formatMeter(n: 7, total: nil, elapsed: 0, barWidth: 10), "7it [00:00, ?it/s]")
        XCTAssertEqual(ProgressBar<[Int]>.formatInterval(3725), "1:02:05")
        XCTAssertEqual(ProgressBar<[Int]>.bar(0.55, width: 4), "██▏ ")
    }

    func testPlainLinesWhenNotATerminal() {
        var lines: [String] = []
        var t = 0.0
        let bar = ProgressBar(Array(0..<10), description: "train", output: .custom(isTerminal: false) { lines.append($0) },
                              plainEvery: 4, clock: { t })
        var seen: [Int] = []
        for i in bar {
            t += 0.5
            seen.append(i)
            bar.setPostfix(["loss": Double(i)])
        }
        XCTAssertEqual(seen, Array(0..<10))
        XCTAssertEqual(bar.n, 10)
        // Steps 4 and 8, then the end.
        XCTAssertEqual(lines.count, 3)
        XCTAssertEqual(lines[0], "train:  40% 4/10 [00:02<00:03, 2.00it/s, loss=3]\n")
        XCTAssertTrue(lines[2].hasPrefix("train: 100% 10/10 [00:05<00:00"), lines[2])
        XCTAssertTrue(lines.allSatisfy { !$0.contains("\r") })
    }

    func testTerminalRedrawsInPlace() {
        var out = ""
        var t = 0.0
        let bar = ProgressBar(0..<3, output: .custom(isTerminal: true) { out += $0 }, clock: { t += 1; return t })
        for _ in bar {}
        XCTAssertTrue(out.hasPrefix("\r"))
        XCTAssertTrue(out.hasSuffix("\n"))
        XCTAssertTrue(out.contains("100%|████████████████████| 3/3"), out)
    }

    func testManualUpdateAndPostfixOrder() {
        var lines: [String] = []
        let bar = tqdm(0..<0, total: 2, description: "d", output: .custom(isTerminal: false) { lines.append($0) })
        bar.setPostfix(["b": 1.5, "a": 0.00001])
        bar.update(2)
        bar.close()
        bar.close()
        XCTAssertEqual(lines.count, 1, "\(lines)")
        XCTAssertTrue(lines[0].contains("a=1.000e-05, b=1.5000"), lines[0])
    }
}
