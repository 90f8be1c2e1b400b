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
        XCTAssertTrue(s.contains("[label=\"\(y.gradFn!.name)\n---"), s)
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

    // MARK: torchviz parity (Tests/Fixtures/make_dot, written by scripts/make_dot_fixtures.py)

    /// torchviz's source for `name`.
    private func fixture(_ name: String) throws -> String {
        try String(contentsOf: fixturesURL.appendingPathComponent("make_dot/\(name).dot"), encoding: .utf8)
    }

    /// Node ids renumbered 1, 2, ... by first appearance: torchviz writes Python `id()`s, makeDot
    /// counts objects as it meets them. Only statement heads are ids (labels are quoted text).
    private func renumbered(_ source: String) -> String {
        var ids: [Substring: Int] = [:]
        func id(_ s: Substring) -> String {
            if let i = ids[s] { return String(i) }
            ids[s] = ids.count + 1
            return String(ids.count)
        }
        func digits(_ s: Substring) -> (Substring, Substring) {
            let d = s.prefix { $0.isASCII && $0.isNumber }
            return (d, s.dropFirst(d.count))
        }
        return source.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard line.hasPrefix("\t") else { return String(line) }
            let (a, rest) = digits(line.dropFirst())
            guard !a.isEmpty else { return String(line) }
            if rest.hasPrefix(" -> ") {
                let (b, tail) = digits(rest.dropFirst(4))
                return "\t\(id(a)) -> \(id(b))\(tail)"
            }
            return "\t\(id(a))\(rest)"
        }.joined(separator: "\n")
    }

    private func assertSameGraph(_ dot: DotGraph, _ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let expected = renumbered(try fixture(name)), actual = renumbered(dot.source)
        XCTAssertEqual(actual, expected, "makeDot differs from torchviz's \(name).dot:\n\(actual)", file: file, line: line)
    }

    /// Tutorial 001: `y = w*x + b`. The saved `self`/`other` of MulBackward0 are the leaves w and x
    /// themselves, so their orange nodes share the leaves' ids, as in torchviz.
    private func tutorial001() -> (Tensor, [String: Tensor]) {
        let w = torch.randn(1, requiresGrad: true)
        let b = torch.randn(1, requiresGrad: true)
        let x = torch.randn(1, requiresGrad: true)
        return (w * x + b, ["x": x, "w": w, "b": b])
    }

    func testTutorial001MatchesTorchviz() throws {
        let (y, params) = tutorial001()
        try assertSameGraph(makeDot(y, params: params, showAttrs: true, showSaved: true), "tutorial001")
    }

    func testFlagsOffMatchTorchviz() throws {
        let (y, params) = tutorial001()
        try assertSameGraph(makeDot(y, params: params), "tutorial001_plain")
        let s = makeDot(y, params: params, showAttrs: false, showSaved: false).source
        XCTAssertFalse(s.contains("dir=none") || s.contains("---") || s.contains("orange"), s)
    }

    private func matmulGraph(addmm: Bool) -> (Tensor, [String: Tensor]) {
        let x = torch.rand(3, 3, requiresGrad: true)
        let w = torch.rand(3, 2, requiresGrad: true)
        let b = torch.rand(2, requiresGrad: true)
        let z = addmm ? torch.addmm(b, x, w) : torch.matmul(x, w) + b
        return (z.pow(2).sum(), ["x": x, "w": w, "b": b])
    }

    func testMatmulAddMatchesTorchviz() throws {
        let (y, params) = matmulGraph(addmm: false)
        try assertSameGraph(makeDot(y, params: params, showAttrs: true, showSaved: true), "matmul_add")
        try assertSameGraph(makeDot(y, params: params, showAttrs: true, maxAttrChars: 8), "matmul_add_narrow")
    }

    func testAddmmMatchesTorchviz() throws {
        let (y, params) = matmulGraph(addmm: true)
        try assertSameGraph(makeDot(y, params: params, showAttrs: true, showSaved: true), "addmm")
    }

    func testSavedTensorTupleMatchesTorchviz() throws {
        let x = torch.rand(3, 4, requiresGrad: true)
        let y = x[0..., torch.tensor([1, 1])].sum()
        try assertSameGraph(makeDot(y, params: ["x": x], showAttrs: true, showSaved: true), "index_columns")
    }

    private func smallCNN() -> (nn.Sequential, Tensor, Tensor) {
        torch.manualSeed(0)
        let model = nn.Sequential(nn.Conv2d(1, 2, 3, padding: 1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8, 3))
        return (model, torch.randn(2, 1, 4, 4), torch.tensor([0, 2]))
    }

    func testSmallCNNMatchesTorchviz() throws {
        let (model, x, target) = smallCNN()
        let loss = F.nllLoss(F.logSoftmax(model(x), dim: 1), target)
        let params = Dictionary(uniqueKeysWithValues: model.namedParameters().map { ($0.0, $0.1 as Tensor) })
        try assertSameGraph(makeDot(loss, params: params, showAttrs: true, showSaved: true), "small_cnn")
    }

    /// `F.crossEntropy` is one fused node: torchviz's graph less its LogSoftmaxBackward0 box and
    /// that node's saved `result`, with NllLossBackward0's `self` being the logits (same shape).
    func testFusedCrossEntropyDiffersOnlyByLogSoftmax() throws {
        let (model, x, target) = smallCNN()
        let loss = F.crossEntropy(model(x), target)
        let params = Dictionary(uniqueKeysWithValues: model.namedParameters().map { ($0.0, $0.1 as Tensor) })
        let ours = makeDot(loss, params: params, showAttrs: true, showSaved: true)
        // Node statements without their ids ("[label=...] fillcolor=..."), sorted.
        func nodes(_ s: String) -> [String] {
            s.components(separatedBy: "\n\t").dropFirst(3).filter { !$0.contains(" -> ") }
                .map { String($0.drop { $0 != " " }) }.sorted()
        }
        var expected = nodes(try fixture("small_cnn"))
        for gone in [" [label=\"LogSoftmaxBackward0\n----------------------\ndim   :              1\nresult: [saved tensor]\"]",
                     " [label=\"result\n (2, 3)\" fillcolor=orange]"] {
            let i = try XCTUnwrap(expected.firstIndex(of: gone), gone)
            expected.remove(at: i)
        }
        XCTAssertEqual(nodes(ours.source), expected)
        let edges = { (s: String) in s.components(separatedBy: " -> ").count - 1 }
        XCTAssertEqual(edges(ours.source), edges(try fixture("small_cnn")) - 2)
    }

    /// After a backward pass without `retainGraph` the saved values are gone (PyTorch raises when
    /// torchviz reads them); makeDot still draws the graph, with names only.
    func testAfterBackwardSavedValuesAreGone() throws {
        let (y, params) = matmulGraph(addmm: false)
        let before = makeDot(y, params: params, showAttrs: true, showSaved: true).source
        y.backward(retainGraph: true)
        XCTAssertEqual(makeDot(y, params: params, showAttrs: true, showSaved: true).source, before)
        y.backward()
        let after = makeDot(y, params: params, showAttrs: true, showSaved: true)
        XCTAssertEqual(after.source, makeDot(y, params: params).source)
        XCTAssertFalse(after.source.contains("orange") || after.source.contains("---"), after.source)
        XCTAssertTrue(after.source.contains("[label=MmBackward0]"), after.source)
    }

    /// One op per entry: the attribute table torchviz shows for its grad_fn (op_labels.json) against
    /// makeDot's. Known differences are asserted as such.
    func testOpAttributeTablesMatchTorchviz() throws {
        let data = try Data(contentsOf: fixturesURL.appendingPathComponent("make_dot/op_labels.json"))
        let expected = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: String])
        let g = { (shape: [Int]) in torch.rand(shape, requiresGrad: true) }
        let x = g([3, 4]), a = g([3, 4]), w = g([4, 2]), b = g([2]), c = g([3, 1])
        let x3 = g([2, 3, 4]), img = g([2, 3, 8, 8]), cw = g([4, 3, 3, 3]), cb = g([4])
        let bw = g([3]), bb = g([3]), lw = g([4]), lb = g([4])
        let t = torch.tensor([0, 1, 3]), p = torch.rand(3, 4)
        let ops: [String: () -> Tensor] = [
            "mul": { x * a }, "mul_scalar": { x * 2 }, "mul_other_only": { x.detach() * a },
            "add": { x + a }, "add_scalar": { x + 2.5 }, "sub": { x - a }, "rsub": { 1 - x },
            "div": { x / a }, "div_scalar": { x / 2 }, "maximum": { x.maximum(a) },
            "pow_scalar": { x.pow(3) }, "pow_half": { x.pow(0.5) }, "square": { x.pow(2) },
            "pow_tensor": { x.pow(a) }, "scalar_pow": { torch.pow(2, x) },
            "exp": { x.exp() }, "log": { x.log() }, "tanh": { x.tanh() }, "sigmoid": { x.sigmoid() },
            "relu": { x.relu() }, "sqrt": { x.sqrt() }, "neg": { -x }, "sin": { x.sin() },
            "abs": { x.abs() }, "clamp": { x.clamp(min: 0, max: 1) }, "clamp_min": { x.clampMin(0.5) },
            "sum": { x.sum() }, "sum_dim": { x.sum(dim: 1) }, "sum_dims_keep": { x.sum(dim: [0, 1], keepdim: true) },
            "sum_neg": { x.sum(dim: -1) }, "mean": { x.mean() }, "mean_dim": { x.mean(dim: 1, keepdim: true) },
            "view": { x.view(12) }, "reshape": { x.reshape(4, 3) }, "flatten": { x3.flatten(startDim: 1) },
            "t": { x.t() }, "permute": { x.permute(1, 0) }, "transpose": { x.transpose(0, 1) },
            "transpose_neg": { x.transpose(-1, -2) }, "unsqueeze": { x.unsqueeze(-1) },
            "squeeze": { x.unsqueeze(0).squeeze(0) }, "expand": { c.expand(3, 4) }, "select": { x.select(0, 1) },
            "narrow": { x.narrow(0, 1, 2) },
            "mm": { x.mm(w) }, "mm_self_only": { x.mm(w.detach()) }, "mm_mat2_only": { x.detach().mm(w) },
            "addmm": { torch.addmm(b, x, w) }, "addmm_beta_alpha": { torch.addmm(b, x, w, beta: 0.5, alpha: 2) },
            "linear": { F.linear(x, w.t(), b) }, "bmm": { torch.bmm(x3, g([2, 4, 5])) },
            "bmm_self_only": { torch.bmm(x3, torch.rand(2, 4, 5)) }, "mv": { x.mv(g([4])) }, "dot": { b.dot(g([2])) },
            "conv": { F.conv2d(img, cw, cb, padding: 1) }, "conv_nobias_stride": { F.conv2d(img, cw, stride: 2) },
            "conv_transpose": { F.convTranspose2d(img, g([3, 4, 3, 3]), stride: 2, outputPadding: 1) },
            "maxpool": { F.maxPool2d(img, 2) },
            "maxpool_ceil": { F.maxPool2d(img, 3, stride: 2, padding: 1, ceilMode: true) },
            "avgpool": { F.avgPool2d(img, 2) },
            "avgpool_pad": { F.avgPool2d(img, 2, stride: 1, padding: 1, countIncludePad: false) },
            "batchnorm_train": { F.batchNorm(img, torch.zeros(3), torch.ones(3), weight: bw, bias: bb, training: true) },
            "batchnorm_eval": { F.batchNorm(img, torch.zeros(3), torch.ones(3), weight: bw, bias: bb, training: false) },
            "layernorm": { F.layerNorm(x, [4], weight: lw, bias: lb) },
            "log_softmax": { F.logSoftmax(x, dim: 1) }, "log_softmax_neg": { F.logSoftmax(x, dim: -1) },
            "softmax": { F.softmax(x, dim: 0) },
            "nll": { F.nllLoss(x, t) }, "nll_sum_ignore": { F.nllLoss(x, t, ignoreIndex: 1, reduction: .sum) },
            "nll_weight": { F.nllLoss(x, t, weight: torch.ones(4)) },
            "mse": { F.mseLoss(x, a) }, "mse_sum": { F.mseLoss(x, p, reduction: .sum) },
            "smooth_l1": { F.smoothL1Loss(x, p) }, "huber": { F.huberLoss(x, p, delta: 0.5) },
            "bce": { F.binaryCrossEntropy(x.sigmoid(), p) }, "bce_logits": { F.binaryCrossEntropyWithLogits(x, p) },
            "leaky_relu": { F.leakyRelu(x) }, "gelu": { F.gelu(x) }, "gelu_tanh": { F.gelu(x, approximate: "tanh") },
            "elu": { F.elu(x) }, "selu": { F.selu(x) }, "celu": { F.celu(x) }, "silu": { F.silu(x) },
            "mish": { F.mish(x) }, "hardtanh": { F.hardtanh(x) }, "relu6": { F.relu6(x) },
            "cat": { torch.cat([x, a]) }, "stack": { torch.stack([x, a], dim: 1) }, "cumsum": { x.cumsum(dim: 1) },
            "where": { torch.where(p .> 0.5, x, a) },
            "index": { x[torch.tensor([0, 2])] }, "index_cols": { x[0..., torch.tensor([1, 1])] },
            "hardsigmoid": { F.hardsigmoid(x) }, "hardswish": { F.hardswish(x) }, "softplus": { F.softplus(x) },
        ]
        XCTAssertEqual(Set(ops.keys), Set(expected.keys))
        for (name, op) in ops.sorted(by: { $0.key < $1.key }) {
            let fn = try XCTUnwrap(op().gradFn, name)
            let ours = attributeTable(fn.name, fn.savedAttributes(), maxAttrChars: 50)
            XCTAssertEqual(ours, expected[name], name)
        }
    }

    func testAttributeTableLayout() {
        let attrs: [SavedAttribute] = [.int("alpha", 1), .tensor("self", torch.zeros(2)), .ints("dim", [-1]),
                                       .ints("sizes", [3]), .scalar("beta", 0.5), .bool("keepdim", true), .none("weight")]
        XCTAssertEqual(attributeTable("XBackward0", attrs, maxAttrChars: 50), """
            XBackward0
            --------------------------------
            alpha  :                       1
            self   :          [saved tensor]
            dim    : (18446744073709551615,)
            sizes  :                    (3,)
            beta   :                     0.5
            keepdim:                    True
            weight :                    None
            """)
        XCTAssertEqual(attributeTable("LongNameBackward0", [.int("a", 1)], maxAttrChars: 50), "LongNameBackward0\n-----------------\na: 1")
        XCTAssertEqual(attributeTable("N", [.tensor("self", torch.zeros(1))], maxAttrChars: 1), "N\n---------\nself: ...")
        XCTAssertEqual(attributeTable("N", [], maxAttrChars: 50), "N")
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
