import XCTest
@testable import Torch

/// `torch.onnx.export` of recurrent layers, the pick/split/pad/resample tensor ops and constant folding: each
/// model is exported with symbolic batch (and sequence) dims, read back with `onnx.load` and run at several
/// sizes; every output must match the module's own within 1e-4 + 1e-3·|ref|.
final class ONNXExportOpsTests: XCTestCase {
    private var dir = ""

    override func setUp() {
        dir = ONNXExportCheck.tempDir() + "/onnx-export-ops-\(UInt32.random(in: 0...UInt32.max))"
        _ = mkdir(dir, 0o755)
        torch.manualSeed(0)
    }

    override func tearDown() { _ = try? ONNXExportCheck.removeTree(dir) }

    // MARK: Recurrent layers

    /// (name, layer, batchFirst, initial states given) — every layer type, stacked, bidirectional, without
    /// biases, batch-first, with and without h0/c0.
    private func recurrentCases() -> [(String, nn.RNNBase, Bool)] {
        [("lstm", nn.LSTM(5, 7), false),
         ("lstm_2l_bi_bf_state", nn.LSTM(5, 6, numLayers: 2, batchFirst: true, bidirectional: true), true),
         ("lstm_nobias_state", nn.LSTM(5, 4, bias: false), true),
         ("gru_2l_nobias_state", nn.GRU(5, 6, numLayers: 2, bias: false), true),
         ("gru_bi_bf", nn.GRU(5, 6, batchFirst: true, bidirectional: true), false),
         ("rnn_tanh_2l_bi_state", nn.RNN(5, 6, numLayers: 2, bidirectional: true), true),
         ("rnn_relu_nobias_bf", nn.RNN(5, 6, nonlinearity: "relu", bias: false, batchFirst: true), false)]
    }

    func testRecurrentLayers() throws {
        for (name, m, withState) in recurrentCases() {
            let isLSTM = m is nn.LSTM
            let states = m.numLayers * m.numDirections
            let seqDim = m.batchFirst ? 1 : 0, batchDim = m.batchFirst ? 0 : 1
            func inputs(seq: Int, batch: Int) -> [Tensor] {
                var shape = [0, 0, 5]
                shape[seqDim] = seq
                shape[batchDim] = batch
                var xs = [torch.randn(shape)]
                if withState {
                    xs.append(torch.randn(states, batch, m.hiddenSize))
                    if isLSTM { xs.append(torch.randn(states, batch, m.hiddenSize)) }
                }
                return xs
            }
            let inNames = ["input"] + (withState ? (isLSTM ? ["h0", "c0"] : ["h0"]) : [])
            let outNames = ["output", "h_n"] + (isLSTM ? ["c_n"] : [])
            var axes: [String: [Int: String]] = ["input": [seqDim: "seq", batchDim: "batch"],
                                                 "output": [seqDim: "seq", batchDim: "batch"], "h_n": [1: "batch"]]
            if withState { axes["h0"] = [1: "batch"] }
            if isLSTM { axes["c_n"] = [1: "batch"]; if withState { axes["c0"] = [1: "batch"] } }
            try ONNXExportCheck.roundTripIO(name, m, inputNames: inNames, outputNames: outNames,
                                            cases: [("b2", inputs(seq: 4, batch: 2)), ("b1", inputs(seq: 3, batch: 1)),
                                                    ("b5", inputs(seq: 6, batch: 5))],
                                            dynamicAxes: axes, dir: dir) { xs in Self.runRecurrent(m, xs) }
            let proto = try Onnx_ModelProto(serializedBytes: try ONNXExportCheck.readAll(dir + "/\(name).onnx"))
            let op = isLSTM ? "LSTM" : m is nn.GRU ? "GRU" : "RNN"
            XCTAssertEqual(proto.graph.node.filter { $0.opType == op }.count, m.numLayers, name)
        }
    }

    func testUnbatchedLSTMWithState() throws {
        let m = nn.LSTM(3, 4, numLayers: 2)
        let xs = [torch.randn(5, 3), torch.randn(2, 4), torch.randn(2, 4)]
        try ONNXExportCheck.roundTripIO("lstm_unbatched", m, inputNames: ["input", "h0", "c0"],
                                        outputNames: ["output", "h_n", "c_n"], cases: [("unbatched", xs)], dir: dir) { xs in
            Self.runRecurrent(m, xs)
        }
    }

    /// Embedding → 2-layer LSTM or GRU (batch first) → Linear over the vocabulary, the tutorial language model's
    /// shape, exported with symbolic batch and sequence length.
    func testLanguageModels() throws {
        for gru in [false, true] {
            let model = ExportLanguageModel(vocab: 50, dim: 16, hidden: 24, gru: gru)
            let tokens = { (b: Int, t: Int) in torch.randint(0, 50, [b, t]) }
            let axes: [String: [Int: String]] = ["input": [0: "batch", 1: "seq"], "output": [0: "batch", 1: "seq"]]
            try ONNXExportCheck.roundTripIO(gru ? "gru_lm" : "lstm_lm", model, inputNames: ["input"], outputNames: ["output"],
                                            cases: [("b2", [tokens(2, 7)]), ("b1", [tokens(1, 3)]), ("b5", [tokens(5, 9)])],
                                            dynamicAxes: axes, dir: dir) { xs in [model(xs[0])] }
        }
    }

    static func runRecurrent(_ m: nn.RNNBase, _ xs: [Tensor]) -> [Tensor] {
        switch m {
        case let l as nn.LSTM:
            let (y, (h, c)) = l(xs[0], xs.count == 3 ? (xs[1], xs[2]) : nil)
            return [y, h, c]
        case let g as nn.GRU:
            let (y, h) = g(xs[0], xs.count == 2 ? xs[1] : nil)
            return [y, h]
        default:
            let (y, h) = (m as! nn.RNN)(xs[0], xs.count == 2 ? xs[1] : nil)
            return [y, h]
        }
    }

    // MARK: Tensor ops

    func testPickSplitPadResampleOps() throws {
        let model = ExportPickOps()
        let axes: [String: [Int: String]] = ["input": [0: "batch"], "features": [0: "batch"], "argmax": [0: "batch"],
                                             "argmin": [0: "batch"]]
        let make = { (b: Int) in [torch.randn(b, 6, 8, 8)] }
        try ONNXExportCheck.roundTripIO("pick_ops", model, inputNames: ["input"],
                                        outputNames: ["features", "argmax", "argmin", "max_all"],
                                        cases: [("b2", make(2)), ("b1", make(1)), ("b5", make(5))],
                                        dynamicAxes: axes, dir: dir) { xs in model.outputs(xs[0]) }
        let proto = try Onnx_ModelProto(serializedBytes: try ONNXExportCheck.readAll(dir + "/pick_ops.onnx"))
        let ops = Set(proto.graph.node.map(\.opType))
        for op in ["Split", "Slice", "Gather", "Where", "Pad", "Resize", "ReduceMax", "ReduceMin", "ArgMax", "ArgMin"] {
            XCTAssertTrue(ops.contains(op), op)
        }
        let modes = proto.graph.node.filter { $0.opType == "Resize" }.map { n in
            n.attribute.first { $0.name == "coordinate_transformation_mode" }.map { String(decoding: $0.s, as: UTF8.self) } ?? ""
        }
        XCTAssertEqual(Set(modes), ["asymmetric", "pytorch_half_pixel", "align_corners"])
    }

    /// atan2 (all four quadrants and 0/0), indexing by a position tensor (`x[..., t]`, indexSelect), by a constant
    /// mask at dim 1 and a computed mask over every dim, by two position tensors on adjacent and on separated dims,
    /// and gather, at symbolic batch.
    func testAtan2IndexingAndGather() throws {
        let model = ExportIndexOps()
        let axes: [String: [Int: String]] = ["input": [0: "batch"], "angles": [0: "batch"], "picked": [0: "batch"],
                                             "gathered": [0: "batch"], "pairs": [0: "batch"]]
        let make = { (b: Int) in [torch.randn(b, 6, 5)] }
        try ONNXExportCheck.roundTripIO("index_ops", model, inputNames: ["input"],
                                        outputNames: ["angles", "picked", "gathered", "masked_sum", "pairs", "apart"],
                                        cases: [("b2", make(2)), ("b1", make(1)), ("b5", make(5))],
                                        dynamicAxes: axes, dir: dir) { xs in model.outputs(xs[0]) }
        let proto = try Onnx_ModelProto(serializedBytes: try ONNXExportCheck.readAll(dir + "/index_ops.onnx"))
        let ops = Set(proto.graph.node.map(\.opType))
        for op in ["Atan", "Where", "Gather", "GatherElements", "NonZero", "GatherND"] { XCTAssertTrue(ops.contains(op), op) }
        let x = torch.tensor([0.0, 0.0, 1.0, -1.0, -1.0]), other = torch.tensor([0.0, -2.0, 0.0, -1.0, 2.0])
        let path = dir + "/atan2.onnx"
        try torch.onnx.export(ExportAtan2(other), x, path)
        let y = try onnx.load(path)(x)
        XCTAssertLessThanOrEqual((y - x.atan2(other)).abs().max().item(), 1e-6, "atan2 at the origin and on the axes")
    }

    /// Adaptive pools whose output sizes do not divide the input (1-D, 2-D, 3-D, average and max) and F.interpolate's
    /// area mode: Slice/ReduceMax and MatMul forms.
    func testAdaptivePoolsThatDoNotDivide() throws {
        try ONNXExportCheck.roundTrip("adaptive_avg_uneven", nn.Sequential(nn.AdaptiveAvgPool2d([3, 5]), nn.AdaptiveMaxPool2d([2, 4])),
                                      torch.randn(2, 3, 7, 9), dir: dir)
        try ONNXExportCheck.roundTrip("adaptive_1d_3d", ExportUnevenPools(), torch.randn(2, 2, 5, 7, 4), dir: dir)
        // Output sizes above the input's (AlexNet's pool to 6×6 on a 1×1 map at small inputs): windows repeat.
        try ONNXExportCheck.roundTrip("adaptive_enlarge", nn.Sequential(nn.AdaptiveMaxPool2d([1, 2]), nn.AdaptiveAvgPool2d(6)),
                                      torch.randn(2, 3, 5, 5), dir: dir)
        let proto = try Onnx_ModelProto(serializedBytes: try ONNXExportCheck.readAll(dir + "/adaptive_avg_uneven.onnx"))
        let ops = Set(proto.graph.node.map(\.opType))
        XCTAssertTrue(ops.isSuperset(of: ["MatMul", "Slice", "ReduceMax", "Concat"]), "\(ops)")
        XCTAssertFalse(ops.contains("AveragePool"))
    }

    /// Antialiased bilinear and bicubic downsampling (sizes and a scale factor) as Resize with `antialias`, read back
    /// by the importer's antialiased Resize; opset 17 has no such Resize.
    func testAntialiasedInterpolation() throws {
        let model = ExportAntialias()
        let axes: [String: [Int: String]] = ["input": [0: "batch"], "sized": [0: "batch"], "scaled": [0: "batch"]]
        let make = { (b: Int) in [torch.randn(b, 3, 16, 20)] }
        try ONNXExportCheck.roundTripIO("antialias", model, inputNames: ["input"], outputNames: ["sized", "scaled"],
                                        cases: [("b2", make(2)), ("b1", make(1)), ("b5", make(5))],
                                        dynamicAxes: axes, dir: dir) { xs in model.outputs(xs[0]) }
        XCTAssertThrowsError(try torch.onnx.export(model, torch.randn(1, 3, 16, 20), dir + "/aa17.onnx", opsetVersion: 17)) { e in
            guard case ONNXExportError.unsupportedOperator(let op, _, _) = e else { return XCTFail("\(e)") }
            XCTAssertEqual(op, "aten::upsample_bilinear")
        }
    }

    func testResizeAndPadAtOpset13() throws {
        let model = nn.Sequential(nn.ReflectionPad2d(1), nn.Upsample(size: [9, 7], mode: .bilinear, alignCorners: false),
                                  nn.ReplicationPad2d([1, 0, 2, 1]), nn.Upsample(scaleFactor: 2.0))
        try ONNXExportCheck.roundTrip("resize_pad_opset13", model, torch.randn(2, 3, 5, 4), dir: dir, opset: 13)
    }

    func testUpsamplingAndPaddingLayers() throws {
        let model = nn.Sequential(nn.ZeroPad2d([1, 1, 2, 0]), nn.Upsample(scaleFactor: 2.0, mode: .nearest),
                                  nn.ConstantPad2d(1, 0.5), nn.Upsample(size: 12, mode: .bicubic, alignCorners: true))
        try ONNXExportCheck.roundTrip("upsample_pad", model, torch.randn(2, 3, 4, 5), dir: dir)
    }

    func testCircularPadNeedsOpset19() throws {
        let model = ExportCircularPad()
        XCTAssertThrowsError(try torch.onnx.export(model, torch.randn(1, 2, 5), dir + "/c.onnx", opsetVersion: 18)) { e in
            guard case ONNXExportError.unsupportedOperator(let op, _, _) = e else { return XCTFail("\(e)") }
            XCTAssertEqual(op, "aten::pad")
        }
        try ONNXExportCheck.roundTrip("circular_pad_opset19", model, torch.randn(2, 2, 5), dir: dir, opset: 19)
    }

    func testTruncFracCumsumUnbind() throws {
        try ONNXExportCheck.roundTrip("trunc_frac_cumsum_unbind", ExportTruncFrac(), torch.randn(2, 7) * 3, dir: dir,
                                      dynamicBatch: false)
    }

    // MARK: The tutorials' small models

    /// Tutorial 002's adder (Linear → ReLU → Linear on two numbers), the two-layer net (clamp(min: 0) as its ReLU)
    /// and the conv net (two 3×3 convs, view(-1, 16·28·28), three Linear layers) at symbolic batch.
    func testTutorialModels() throws {
        try ONNXExportCheck.roundTrip("adder", ExportAdder(), torch.randn(2, 2), dir: dir)
        try ONNXExportCheck.roundTrip("two_layer_net", ExportTwoLayerNet(), torch.randn(2, 100), dir: dir)
        try ONNXExportCheck.roundTrip("conv_net", ExportConvNet(), torch.randn(2, 1, 32, 32), dir: dir)
    }

    // MARK: Constant folding

    /// `w * 2 + 1` and `w.t()` depend on weights alone: with doConstantFolding they are initializers, without it
    /// Mul/Add/Transpose nodes; both files compute the same.
    func testConstantFolding() throws {
        let model = ExportFoldable()
        let x = torch.randn(3, 4)
        let ref = torch.noGrad { model(x) }
        for fold in [true, false] {
            let path = dir + "/fold_\(fold).onnx"
            try torch.onnx.export(model, x, path, doConstantFolding: fold)
            let back = try onnx.load(path)
            ONNXExportCheck.assertMatches(try back.run(["input": x])["output"]!, ref, "fold \(fold)")
            let proto = try Onnx_ModelProto(serializedBytes: try ONNXExportCheck.readAll(path))
            let ops = proto.graph.node.map(\.opType)
            XCTAssertEqual(proto.graph.initializer.contains { $0.name == "w" }, !fold, "fold \(fold)")
            XCTAssertEqual(ops, fold ? ["MatMul", "Add"] : ["Mul", "Add", "Transpose", "MatMul", "Add"], "fold \(fold)")
        }
    }
}

/// Embedding → LSTM or GRU (2 layers, batch first) → Linear: next-token logits for every position.
final class ExportLanguageModel: nn.Module {
    let embed: nn.Embedding
    let rnn: nn.RNNBase
    let head: nn.Linear

    init(vocab: Int, dim: Int, hidden: Int, gru: Bool) {
        embed = nn.Embedding(vocab, dim)
        rnn = gru ? nn.GRU(dim, hidden, numLayers: 2, batchFirst: true) : nn.LSTM(dim, hidden, numLayers: 2, batchFirst: true)
        head = nn.Linear(hidden, vocab)
        super.init()
    }

    override func forward(_ x: Tensor) -> Tensor { head(rnn(embed(x))) }
}

/// chunk, split, cat, narrow, range indexing, where, F.pad (three modes), F.interpolate (nearest, bilinear with
/// and without align_corners, bicubic), max(dim:), amax, amin, select, stack, argmax, argmin, max().
final class ExportPickOps: nn.Module {
    func outputs(_ x: Tensor) -> [Tensor] {
        let halves = x.chunk(2, dim: 1), parts = x.split([1, 2, 3], dim: 1)
        var y = torch.cat([halves[1], halves[0]], dim: 1) + torch.cat([parts[2], parts[0], parts[1]], dim: 1)
        y = y.narrow(2, 1, 6)[0..., 0..., 0..., 2...]                                  // [N, 6, 6, 6]
        let z = torch.where(y .> 0, y, y * 0.1)
        let p = F.pad(z, [1, 1, 2, 0], value: 0.5), p2 = F.pad(z, [1, 1, 1, 1], mode: .reflect)
        let p3 = F.pad(z, [2, 0, 0, 2], mode: .replicate)                             // each [N, 6, 8, 8]
        let s = F.interpolate(p, scaleFactor: 2.0) + F.interpolate(p2, size: [16, 16], mode: .bilinear, alignCorners: false)
            + F.interpolate(p3, size: 16, mode: .bilinear, alignCorners: true)
            + F.interpolate(p, scaleFactor: 2.0, mode: .bicubic, alignCorners: false)   // [N, 6, 16, 16]
        let m = s.max(dim: 1, keepdim: true).values + s.amax(dim: [2, 3], keepdim: true)  // [N, 6, 16, 16]
        let sel = m.select(1, -1)                                                       // [N, 16, 16]
        let features = torch.stack([sel.mean(dim: [2]), sel.amin(dim: [1])], dim: 1)  // [N, 2, 16]
        return [features, features.flatten(startDim: 1).argmax(dim: 1), features.argmin(dim: 2, keepdim: true), s.max()]
    }

    override func forward(_ x: Tensor) -> Tensor { outputs(x)[0] }
}

/// atan2, indexing and gather on a `[N, 6, 5]` input.
final class ExportIndexOps: nn.Module {
    func outputs(_ x: Tensor) -> [Tensor] {
        let zero = x.relu() - x.relu()
        let angles = x.atan2(x * -0.5 + 0.1) + zero.atan2(zero)                           // [N, 6, 5]
        let columns = x[0..., torch.tensor([4, 0, 2])]                                     // [N, 3, 5]
        let rows = x.indexSelect(2, torch.tensor([1, 1, 3]))                               // [N, 6, 3]
        let kept = x[0..., torch.tensor([true, false, true, true, false, true])]          // [N, 4, 5]
        let picked = rows.matmul(columns) + kept.sum(dim: 1, keepdim: true)                // [N, 6, 5]
        let gathered = x.gather(2, x.argmax(dim: 2, keepdim: true))                        // [N, 6, 1]
        let pairs = x[0..., torch.tensor([0, 2]), torch.tensor([[1], [-1]])]              // [N, 2, 2]: adjacent dims
        let apart = x.unsqueeze(3)[0..., torch.tensor([5, 1]), 0..., torch.tensor([0, -1])]  // [2, N, 5]: B goes first
        return [angles, picked, gathered, x[x .> 0.5].sum(), pairs, apart]
    }

    override func forward(_ x: Tensor) -> Tensor { outputs(x)[0] }
}

/// Antialiased downsampling of a `[N, 3, 16, 20]` input: bilinear and bicubic to 5×7, bilinear by 0.4.
final class ExportAntialias: nn.Module {
    func outputs(_ x: Tensor) -> [Tensor] {
        let sized = F.interpolate(x, size: [5, 7], mode: .bilinear, antialias: true)
            + F.interpolate(x, size: [5, 7], mode: .bicubic, antialias: true)
        return [sized, F.interpolate(x, scaleFactor: 0.4, mode: .bilinear, antialias: true)]
    }

    override func forward(_ x: Tensor) -> Tensor { outputs(x)[0] }
}

final class ExportAtan2: nn.Module {
    let other: Tensor
    init(_ other: Tensor) { self.other = other; super.init() }
    override func forward(_ x: Tensor) -> Tensor { x.atan2(other) }
}

/// Adaptive pools on `[N, 2, 5, 7, 4]` whose sizes divide on no axis: 3-D max and average, then 1-D average, and
/// F.interpolate's area mode on a flattened view.
final class ExportUnevenPools: nn.Module {
    let max3d = nn.AdaptiveMaxPool3d([2, 3, 3])
    let avg3d = nn.AdaptiveAvgPool3d([2, 3, 3])
    let avg1d = nn.AdaptiveAvgPool1d(4)
    override func forward(_ x: Tensor) -> Tensor {
        let pooled = avg1d((max3d(x) + avg3d(x)).flatten(startDim: 2))                           // [N, 2, 4]
        let area = F.interpolate(x.flatten(startDim: 3), size: [3, 4], mode: .area)             // [N, 2, 3, 4]
        return pooled + area.flatten(startDim: 2).narrow(2, 0, 4)
    }
}

/// The adder of tutorial 002 (Examples/AddTwoNumbers).
final class ExportAdder: nn.Module {
    let inputToHiddenLayer = nn.Linear(2, 8)
    let hiddenLayerActivation = nn.ReLU()
    let hiddenToOutputLayer = nn.Linear(8, 1)
    override func forward(_ x: Tensor) -> Tensor { hiddenToOutputLayer(hiddenLayerActivation(inputToHiddenLayer(x))) }
}

/// The custom module of the two-layer-net tutorial (Examples/TwoLayerNet).
final class ExportTwoLayerNet: nn.Module {
    let linear1 = nn.Linear(100, 64, bias: false)
    let linear2 = nn.Linear(64, 10, bias: false)
    override func forward(_ x: Tensor) -> Tensor { linear2(linear1(x).clamp(min: 0)) }
}

/// The conv net of the conv-net tutorial (Examples/ConvNet).
final class ExportConvNet: nn.Module {
    let conv1 = nn.Conv2d(1, 6, 3)
    let conv2 = nn.Conv2d(6, 16, 3)
    let fc1 = nn.Linear(16 * 28 * 28, 512)
    let fc2 = nn.Linear(512, 64)
    let fc3 = nn.Linear(64, 2)
    override func forward(_ input: Tensor) -> Tensor {
        var x = F.relu(conv2(F.relu(conv1(input))))
        x = x.view(-1, 16 * 28 * 28)
        return fc3(F.relu(fc2(F.relu(fc1(x)))))
    }
}

final class ExportTruncFrac: nn.Module {
    override func forward(_ x: Tensor) -> Tensor {
        let rows = x.cumsum(dim: 1).unbind(dim: 0)
        return x.trunc() * 0.5 + x.frac() + torch.stack(Array(rows.reversed()), dim: 0)
    }
}

final class ExportCircularPad: nn.Module {
    override func forward(_ x: Tensor) -> Tensor { F.pad(x, [2, 1], mode: .circular) }
}

/// A forward with weight-only subexpressions for constant folding.
final class ExportFoldable: nn.Module {
    let w = nn.Parameter(torch.randn(5, 4))
    let b = nn.Parameter(torch.randn(5))
    override func forward(_ x: Tensor) -> Tensor { x.matmul((w * 2 + 1).t()) + b }
}
