import Foundation
import XCTest
@testable import Torch

/// `makeDot` draws the autograd graph as torchviz does; `render` runs Graphviz.
final class MakeDotTests: XCTestCase {
    private func graph() -> (DotGraph, Tensor) {
        let x = torch.rand(3, 3, requiresGrad: true)
        let w = torch.rand(3, 2, requiresGrad: true)
        let b = torch.rand(2, requiresGrad: true)
        let y = (torch.matmul(x, w) + b).pow(2).sum()
        return (makeDot(y, params: ["x": x, "w": w, "b": b], showAttrs: true, showSaved: true), y)
    }

    func testNodesEdgesAndLabels() {
        let (dot, y) = graph()
        let s = dot.source
        XCTAssertTrue(s.hasPrefix("digraph {\n\tgraph [size=\"12,12\"]\n\tnode [align=left fontname=monospace"), s)
        XCTAssertTrue(s.hasSuffix("}\n"))
        // The output (green, 0-d), its grad_fn, the leaves in blue with names and shapes.
        XCTAssertTrue(s.contains("1 [label=\"\n ()\" fillcolor=darkolivegreen1]"), s)
        XCTAssertTrue(s.contains("[label=\(y.gradFn!.name)]"), s)
        for leaf in ["x\n (3, 3)", "w\n (3, 2)", "b\n (2)"] {
            XCTAssertTrue(s.contains("[label=\"\(leaf)\" fillcolor=lightblue]"), leaf)
        }
        XCTAssertEqual(s.components(separatedBy: "[label=AccumulateGrad]").count - 1, 3)
        XCTAssertEqual(s.components(separatedBy: "fillcolor=lightblue").count - 1, 3)
        // Every edge joins two declared nodes; the output's grad_fn points at the output.
        let nodeIDs = Set(dot.body.filter { !$0.contains("->") }.map { $0.split(separator: " ")[0] })
        let edges = dot.body.filter { $0.contains("->") }.map { $0.split(separator: " ") }
        XCTAssertFalse(edges.isEmpty)
        for e in edges { XCTAssertTrue(nodeIDs.contains(e[0]) && nodeIDs.contains(e[2]), "\(e)") }
        XCTAssertTrue(edges.contains { $0[2] == "1" })
        XCTAssertEqual(dotQuote("AddBackward0"), "AddBackward0")
        XCTAssertEqual(dotQuote("a \"b\""), "\"a \\\"b\\\"\"")
    }

    func testRenderRunsGraphvizOrThrows() throws {
        let (dot, _) = graph()
        // SWIFTTORCH_DOT_KEEP=<path without extension> keeps the rendering to look at.
        let base = try ProcessInfo.processInfo.environment["SWIFTTORCH_DOT_KEEP"]
            ?? makeTemporaryFolder(self).appendingPathComponent("compute_graph").path
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/dot") {
            let out = try dot.render(filename: base, format: "png")
            XCTAssertEqual(out, base + ".png")
            let png = [UInt8](try Data(contentsOf: URL(fileURLWithPath: out)))
            XCTAssertEqual(Array(png.prefix(4)), [0x89, 0x50, 0x4E, 0x47])
            XCTAssertEqual(try String(contentsOfFile: base, encoding: .utf8), dot.source)
        }
        let saved = ProcessInfo.processInfo.environment["PATH"]
        setenv("PATH", "/nonexistent", 1)
        defer { if let saved { setenv("PATH", saved, 1) } }
        XCTAssertThrowsError(try dot.render(filename: base, format: "png")) { error in
            XCTAssertTrue("\(error)".contains("Graphviz"), "\(error)")
        }
    }
}
