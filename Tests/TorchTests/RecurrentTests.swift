import XCTest
@testable import Torch

/// nn.RNN / nn.LSTM / nn.GRU and their cells against PyTorch (scripts/fixtures/recurrent.py),
/// gradchecks of the fused backward through time, structure, reprs and messages.
final class RecurrentTests: XCTestCase {
    private func cases(_ kind: String) throws -> [[String: Any]] {
        try loadFixtureCases("recurrent").filter { $0["kind"] as? String == kind }
    }

    private func tol(_ t: Tensor) -> Double { t.dtype == .float64 ? 1e-10 : 3e-5 }

    /// The fixture's `[[name, tensor], ...]` as a state dict.
    private func stateDict(_ any: Any?) -> OrderedDict<Tensor> {
        OrderedDict((any as! [[Any]]).map { ($0[0] as! String, fixtureTensor($0[1])) })
    }

    private func layer(_ mode: String, layers: Int, bias: Bool, batchFirst: Bool, bidirectional: Bool,
                       dtype: DType) -> nn.RNNBase {
        switch mode {
        case "rnn_tanh", "rnn_relu":
            return nn.RNN(2, 3, numLayers: layers, nonlinearity: mode == "rnn_tanh" ? "tanh" : "relu", bias: bias,
                          batchFirst: batchFirst, bidirectional: bidirectional, dtype: dtype)
        case "lstm":
            return nn.LSTM(2, 3, numLayers: layers, bias: bias, batchFirst: batchFirst, bidirectional: bidirectional, dtype: dtype)
        default:
            return nn.GRU(2, 3, numLayers: layers, bias: bias, batchFirst: batchFirst, bidirectional: bidirectional, dtype: dtype)
        }
    }

    /// Runs a layer with optional states; returns (output, h_n, c_n).
    private func run(_ m: nn.RNNBase, _ x: Tensor, _ h0: Tensor?, _ c0: Tensor?) -> (Tensor, Tensor, Tensor?) {
        if let lstm = m as? nn.LSTM {
            let (y, (h, c)) = h0 != nil ? lstm(x, (h0!, c0!)) : lstm(x)
            return (y, h, c)
        }
        if let rnn = m as? nn.RNN { let (y, h) = rnn(x, h0); return (y, h, nil) }
        let (y, h) = (m as! nn.GRU)(x, h0)
        return (y, h, nil)
    }

    func testLayersMatchPyTorch() throws {
        let all = try cases("layer")
        XCTAssertEqual(all.count, 24)
        for c in all {
            let name = c["name"] as! String
            let x0 = fixtureTensor(c["x"]!)
            let m = layer(c["mode"] as! String, layers: c["num_layers"] as! Int, bias: c["bias"] as! Bool,
                          batchFirst: c["batch_first"] as! Bool, bidirectional: c["bidirectional"] as! Bool, dtype: x0.dtype)
            try m.loadStateDict(stateDict(c["params"]))
            let t = tol(x0)
            // Contiguous and strided inputs give the same results.
            for layout in ["contiguous", "transposed", "sliced"] {
                m.zeroGrad()
                let x = fixtureTensor(c["x"]!, layout: layout).requiresGrad_()
                let h0 = c["h0"].map { fixtureTensor($0, layout: layout).requiresGrad_() }
                let c0 = c["c0"].map { fixtureTensor($0, layout: layout).requiresGrad_() }
                let (y, hn, cn) = run(m, x, h0, c0)
                let label = "\(name) \(layout)"
                assertClose(y, fixtureTensor(c["y"]!), atol: t, rtol: t, "\(label) output")
                assertClose(hn, fixtureTensor(c["hn"]!), atol: t, rtol: t, "\(label) h_n")
                var loss = (y * fixtureTensor(c["wy"]!)).sum() + (hn * fixtureTensor(c["wh"]!)).sum()
                if let cn {
                    assertClose(cn, fixtureTensor(c["cn"]!), atol: t, rtol: t, "\(label) c_n")
                    loss = loss + (cn * fixtureTensor(c["wc"]!)).sum()
                }
                loss.backward()
                assertClose(x.grad!, fixtureTensor(c["gx"]!), atol: t, rtol: t, "\(label) grad input")
                if let h0 { assertClose(h0.grad!, fixtureTensor(c["gh0"]!), atol: t, rtol: t, "\(label) grad h0") }
                if let c0 { assertClose(c0.grad!, fixtureTensor(c["gc0"]!), atol: t, rtol: t, "\(label) grad c0") }
                let named = Dictionary(uniqueKeysWithValues: m.namedParameters())
                for (pname, g) in stateDict(c["grads"]).items {
                    assertClose(named[pname]!.grad!, g, atol: t, rtol: t, "\(label) grad \(pname)")
                }
            }
        }
    }

    private func cell(_ mode: String, bias: Bool, dtype: DType) -> nn.RNNCellBase {
        switch mode {
        case "rnn_tanh": return nn.RNNCell(2, 3, bias: bias, dtype: dtype)
        case "rnn_relu": return nn.RNNCell(2, 3, bias: bias, nonlinearity: "relu", dtype: dtype)
        case "lstm": return nn.LSTMCell(2, 3, bias: bias, dtype: dtype)
        default: return nn.GRUCell(2, 3, bias: bias, dtype: dtype)
        }
    }

    func testCellsMatchPyTorch() throws {
        let all = try cases("cell")
        XCTAssertEqual(all.count, 12)
        for c in all {
            let name = c["name"] as! String
            let x = fixtureTensor(c["x"]!).requiresGrad_()
            let m = cell(c["mode"] as! String, bias: c["bias"] as! Bool, dtype: x.dtype)
            try m.loadStateDict(stateDict(c["params"]))
            let t = tol(x)
            let h = c["h"].map { fixtureTensor($0).requiresGrad_() }
            let cs = c["c"].map { fixtureTensor($0).requiresGrad_() }
            var loss: Tensor
            if let lstm = m as? nn.LSTMCell {
                let (h1, c1) = h != nil ? lstm(x, (h!, cs!)) : lstm(x)
                assertClose(h1, fixtureTensor(c["h1"]!), atol: t, rtol: t, "\(name) h'")
                assertClose(c1, fixtureTensor(c["c1"]!), atol: t, rtol: t, "\(name) c'")
                XCTAssertEqual(h1.gradFn?.name, x.dim == 1 ? "SqueezeBackward1" : "MulBackward0")
                XCTAssertEqual(c1.gradFn?.name, x.dim == 1 ? "SqueezeBackward1" : "AddBackward0")
                loss = (h1 * fixtureTensor(c["wh"]!)).sum() + (c1 * fixtureTensor(c["wc"]!)).sum()
            } else {
                let h1: Tensor
                if let r = m as? nn.RNNCell {
                    h1 = r(x, h)
                    XCTAssertEqual(h1.gradFn?.name, x.dim == 1 ? "SqueezeBackward1" : (r.nonlinearity == "tanh" ? "TanhBackward0" : "ReluBackward0"))
                } else {
                    h1 = (m as! nn.GRUCell)(x, h)
                }
                assertClose(h1, fixtureTensor(c["h1"]!), atol: t, rtol: t, "\(name) h'")
                loss = (h1 * fixtureTensor(c["wh"]!)).sum()
            }
            loss.backward()
            assertClose(x.grad!, fixtureTensor(c["gx"]!), atol: t, rtol: t, "\(name) grad input")
            if let h { assertClose(h.grad!, fixtureTensor(c["gh"]!), atol: t, rtol: t, "\(name) grad h") }
            if let cs { assertClose(cs.grad!, fixtureTensor(c["gc"]!), atol: t, rtol: t, "\(name) grad c") }
            let named = Dictionary(uniqueKeysWithValues: m.namedParameters())
            for (pname, g) in stateDict(c["grads"]).items {
                assertClose(named[pname]!.grad!, g, atol: t, rtol: t, "\(name) grad \(pname)")
            }
        }
    }

    func testSeededInitMatchesPyTorch() throws {
        let all = try cases("init")
        XCTAssertEqual(all.count, 6)
        for c in all {
            let name = c["name"] as! String
            torch.manualSeed(0)
            let m: nn.Module
            switch name {
            case "lstm_3_4": m = nn.LSTM(3, 4)
            case "gru_2_3_bi2": m = nn.GRU(2, 3, 2, bidirectional: true)
            case "rnn_2_3_nobias": m = nn.RNN(2, 3, bias: false)
            case "lstmcell_3_4": m = nn.LSTMCell(3, 4)
            case "grucell_2_3": m = nn.GRUCell(2, 3)
            default: m = nn.RNNCell(2, 3)
            }
            let expected = stateDict(c["params"])
            let got = m.namedParameters()
            XCTAssertEqual(got.map { $0.0 }, expected.keys, name)
            for ((n, p), e) in zip(got, expected.values) {
                // Bit-exact: the same draws from the same generator.
                assertClose(p, e, atol: 0, rtol: 0, "\(name) \(n)")
            }
        }
    }

    func testStructureMatchesPyTorch() throws {
        let all = try cases("structure")
        XCTAssertEqual(all.count, 13)
        for c in all {
            let name = c["name"] as! String
            let m: nn.Module
            switch name {
            case "lstm": m = nn.LSTM(3, 4)
            case "lstm_bf": m = nn.LSTM(28, 128, batchFirst: true)
            case "lstm_full": m = nn.LSTM(3, 4, numLayers: 2, bias: false, batchFirst: true, dropout: 0.5, bidirectional: true)
            case "gru2bi": m = nn.GRU(3, 4, 2, bidirectional: true)
            case "gru_dropout": m = nn.GRU(3, 4, 3, dropout: 0.25)
            case "rnn_relu": m = nn.RNN(3, 4, nonlinearity: "relu")
            case "rnn_bi3": m = nn.RNN(3, 4, 3, bias: false, bidirectional: true)
            case "rnncell": m = nn.RNNCell(3, 4)
            case "rnncell_relu": m = nn.RNNCell(3, 4, nonlinearity: "relu")
            case "rnncell_relu_nobias": m = nn.RNNCell(3, 4, bias: false, nonlinearity: "relu")
            case "lstmcell": m = nn.LSTMCell(3, 4)
            case "grucell_nobias": m = nn.GRUCell(3, 4, bias: false)
            case "sequential": m = nn.Sequential(nn.LSTM(3, 4, batchFirst: true), nn.Linear(4, 2))
            default: XCTFail("unknown structure case \(name)"); continue
            }
            XCTAssertEqual(m.description, c["repr"] as! String, name)
            let named = m.namedParameters()
            XCTAssertEqual(named.map { $0.0 }, c["names"] as! [String], name)
            XCTAssertEqual(named.map { $0.1.shape }, c["shapes"] as! [[Int]], name)
            XCTAssertEqual(m.stateDict().keys, c["state_keys"] as! [String], name)
        }
        let lstm = nn.LSTM(3, 4, 2, bidirectional: true)
        XCTAssertEqual(lstm.mode, "LSTM")
        XCTAssertEqual(lstm.allWeights.count, 4)
        XCTAssertTrue(lstm.allWeights[1][0] === lstm.getParameter("weight_ih_l0_reverse"))
        XCTAssertEqual(nn.RNN(2, 2, nonlinearity: "relu").mode, "RNN_RELU")
    }

    // MARK: Gradchecks of the fused backward through time

    /// Every mode, both directions, with and without biases: gradients of input, h0, c0 and all
    /// weights of one fused layer against central differences.
    func testLayerGradcheck() {
        torch.manualSeed(5)
        for mode in [RNNMode.rnnTanh, .rnnRelu, .lstm, .gru] {
            for reverse in [false, true] {
                for bias in [true, false] {
                    let (steps, batch, inSize, hidden) = (3, 2, 2, 3)
                    let g = mode.gateCount * hidden
                    var inputs = [torch.randn(steps, batch, inSize, dtype: .float64), torch.randn(batch, hidden, dtype: .float64)]
                    if mode == .lstm { inputs.append(torch.randn(batch, hidden, dtype: .float64)) }
                    inputs += [torch.randn(g, inSize, dtype: .float64) * 0.7, torch.randn(g, hidden, dtype: .float64) * 0.7]
                    if bias { inputs += [torch.randn(g, dtype: .float64), torch.randn(g, dtype: .float64)] }
                    let hasC = mode == .lstm
                    gradcheck(inputs) { xs in
                        let w = hasC ? 3 : 2
                        let p = RNNLayerParams(wIh: xs[w], wHh: xs[w + 1], bIh: bias ? xs[w + 2] : nil, bHh: bias ? xs[w + 3] : nil)
                        let r = rnnLayerForward(mode, input: xs[0], h0: xs[1], c0: hasC ? xs[2] : nil, p, reverse: reverse)
                        var parts = [r.output.reshape(-1), r.hN.reshape(-1)]
                        if let c = r.cN { parts.append(c.reshape(-1)) }
                        return torch.cat(parts)
                    }
                }
            }
        }
    }

    /// Whole modules (2 layers, bidirectional, batch-first): gradients of the input and states.
    func testModuleGradcheck() {
        torch.manualSeed(6)
        for mode in ["rnn_tanh", "lstm", "gru"] {
            let m = layer(mode, layers: 2, bias: true, batchFirst: true, bidirectional: true, dtype: .float64)
            var inputs = [torch.randn(2, 3, 2, dtype: .float64), torch.randn(4, 2, 3, dtype: .float64)]
            if mode == "lstm" { inputs.append(torch.randn(4, 2, 3, dtype: .float64)) }
            gradcheck(inputs) { xs in
                let (y, h, c) = self.run(m, xs[0], xs[1], xs.count > 2 ? xs[2] : nil)
                var parts = [y.reshape(-1), h.reshape(-1)]
                if let c { parts.append(c.reshape(-1)) }
                return torch.cat(parts)
            }
        }
    }

    // MARK: Behaviour

    func testShapesNodesAndUnbatched() {
        let lstm = nn.LSTM(5, 7, batchFirst: true)
        let x = torch.randn(4, 6, 5, requiresGrad: true)
        let (output, (hN, cN)) = lstm(x)
        XCTAssertEqual(output.shape, [4, 6, 7])
        XCTAssertEqual(hN.shape, [1, 4, 7])
        XCTAssertEqual(cN.shape, [1, 4, 7])
        XCTAssertEqual(output.gradFn?.name, "TransposeBackward0")
        XCTAssertEqual(hN.gradFn?.name, "StackBackward0")
        // The last step's output is h_n.
        assertClose(output.select(1, 5), hN.select(0, 0), atol: 0, rtol: 0)

        let (o2, _) = nn.LSTM(5, 7)(torch.randn(6, 4, 5, requiresGrad: true))
        XCTAssertEqual(o2.gradFn?.name, "MkldnnRnnLayerBackward0")
        let (o3, h3) = nn.GRU(5, 7, 2, bidirectional: true)(torch.randn(6, 4, 5, requiresGrad: true))
        XCTAssertEqual(o3.shape, [6, 4, 14])
        XCTAssertEqual(h3.shape, [4, 4, 7])
        XCTAssertEqual(o3.gradFn?.name, "CatBackward0")
        let (o4, _) = nn.GRU(5, 7)(torch.randn(6, 4, 5, requiresGrad: true))
        XCTAssertEqual(o4.gradFn?.name, "StackBackward0")
        // Reverse direction: its half of the output at step 0 is its final state.
        assertClose(o3.select(0, 0).narrow(1, 7, 7), h3.select(0, 3), atol: 0, rtol: 0)

        // Unbatched input: [seq, in] -> [seq, D*H]; states [L*D, H].
        let rnn = nn.RNN(5, 7, 2, batchFirst: true, bidirectional: true)
        let xs = torch.randn(6, 5)
        let (ou, hu) = rnn(xs, torch.zeros(4, 7))
        XCTAssertEqual(ou.shape, [6, 14])
        XCTAssertEqual(hu.shape, [4, 7])
        let (ob, hb) = rnn(xs.unsqueeze(0))
        assertClose(ou, ob.squeeze(0), atol: 0, rtol: 0)
        assertClose(hu, hb.squeeze(1), atol: 0, rtol: 0)

        // No grad: no node.
        let (o5, _) = torch.noGrad { nn.LSTM(5, 7)(torch.randn(6, 4, 5)) }
        XCTAssertNil(o5.gradFn)
        // Containers get the output sequence.
        XCTAssertEqual(nn.Sequential(nn.GRU(5, 7, batchFirst: true), nn.Linear(7, 2))(torch.randn(4, 6, 5)).shape, [4, 6, 2])
    }

    func testDropoutBetweenLayers() {
        torch.manualSeed(1)
        let m = nn.LSTM(4, 8, numLayers: 2, dropout: 0.5)
        let x = torch.randn(5, 3, 4)
        m.eval()
        let (e1, _) = m(x)
        let (e2, _) = m(x)
        assertClose(e1, e2, atol: 0, rtol: 0)
        m.train()
        let (t1, _) = m(x)
        let (t2, _) = m(x)
        XCTAssertGreaterThan((t1 - e1).abs().max().item(), 1e-4)
        XCTAssertGreaterThan((t1 - t2).abs().max().item(), 1e-4)
        // Same as eval without dropout on one layer.
        let single = nn.GRU(4, 8, dropout: 0)
        single.train()
        let (a, _) = single(x)
        single.eval()
        let (b, _) = single(x)
        assertClose(a, b, atol: 0, rtol: 0)
    }

    func testRetainGraphAccumulates() {
        let m = nn.GRU(3, 4, bidirectional: true)
        let x = torch.randn(5, 2, 3, requiresGrad: true)
        let (y, h) = m(x)
        let loss = y.sum() + h.pow(2).sum()
        loss.backward(retainGraph: true)
        let g1 = x.grad!.clone(), w1 = m.getParameter("weight_hh_l0_reverse").grad!.clone()
        loss.backward()
        assertClose(x.grad!, g1 * 2, atol: 1e-6, rtol: 1e-5)
        assertClose(m.getParameter("weight_hh_l0_reverse").grad!, w1 * 2, atol: 1e-6, rtol: 1e-5)
        // Bias gradients of b_ih and b_hh are separate tensors.
        let l = nn.LSTM(3, 4)
        let (yl, _) = l(x)
        yl.sum().backward()
        XCTAssertFalse(l.getParameter("bias_ih_l0").grad!.storage === l.getParameter("bias_hh_l0").grad!.storage)
    }

    func testFloat32MatchesFloat64() {
        // Longer, wider float32 runs (SIMD bodies and tails, batches split over several per-step
        // GEMM calls) agree with the same models in float64.
        torch.manualSeed(3)
        for mode in ["rnn_tanh", "rnn_relu", "lstm", "gru"] {
            let make = { (dtype: DType) -> nn.RNNBase in
                switch mode {
                case "lstm": return nn.LSTM(28, 37, batchFirst: true, bidirectional: true, dtype: dtype)
                case "gru": return nn.GRU(28, 37, batchFirst: true, bidirectional: true, dtype: dtype)
                default: return nn.RNN(28, 37, nonlinearity: mode == "rnn_tanh" ? "tanh" : "relu", batchFirst: true,
                                       bidirectional: true, dtype: dtype)
                }
            }
            let m32 = make(.float32), m64 = make(.float64)
            try! m64.loadStateDict(m32.stateDict())
            let x = torch.randn(40, 20, 28)
            let (y32, h32, _) = run(m32, x, nil, nil)
            let (y64, h64, _) = run(m64, x.double(), nil, nil)
            assertClose(y32.double(), y64, atol: 2e-5, rtol: 1e-4, mode)
            assertClose(h32.double(), h64, atol: 2e-5, rtol: 1e-4, mode)
            (y32.sum() + h32.sum()).backward()
            (y64.sum() + h64.sum()).backward()
            for ((n, a), b) in zip(m32.namedParameters(), m64.parameters()) {
                assertClose(a.grad!.double(), b.grad!, atol: 5e-4, rtol: 1e-3, "\(mode) \(n)")
            }
        }
    }

    func testMessages() {
        XCTAssertEqual(nn.RNNBase.inputRankMessage("LSTM", 4), "LSTM: Expected input to be 2D or 3D, got 4D instead")
        XCTAssertEqual(nn.RNNBase.inputRankMessage("RNN", 1), "RNN: Expected input to be 2D or 3D, got 1D tensor instead")
        XCTAssertEqual(nn.RNNBase.stateRankMessage(batched: true, hDim: 2),
                       "For batched 3-D input, hx should also be 3-D but got 2-D tensor")
        XCTAssertEqual(nn.RNNBase.lstmStateRankMessage(batched: false, hDim: 3, cDim: 2),
                       "For unbatched 2-D input, hx and cx should also be 2-D but got (3-D, 2-D) tensors")
        XCTAssertEqual(nn.RNNBase.hiddenSizeMessage("Expected hidden size", [2, 3, 4], [1, 3, 4]),
                       "Expected hidden size (2, 3, 4), got [1, 3, 4]")
        XCTAssertEqual(nn.RNNBase.dtypeMismatchMessage(input: .float64, weight: .float32),
                       "RNN input dtype (torch.float64) does not match weight dtype (torch.float32). Convert input: input.to(torch.float32), or convert model: model.to(torch.float64)")
    }
}
