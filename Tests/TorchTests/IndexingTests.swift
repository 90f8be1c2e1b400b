import XCTest
@testable import Torch

/// `x[...]` reads and writes against PyTorch (Tests/Fixtures/indexing.json, scripts/fixtures/indexing.py):
/// each fixture name maps to the same expression written in Swift below.
final class IndexingTests: XCTestCase {
    private static func mask2(_ x: Tensor) -> Tensor { x[.ellipsis, 0] .> -5 }

    private static let getters: [String: (Tensor) -> Tensor] = [
        "int0": { $0[0] },
        "int_neg": { $0[-1] },
        "int_int": { $0[1, 2] },
        "int_int_int": { $0[1, 2, 3] },
        "range": { $0[1..<3] },
        "closed_range": { $0[1...2] },
        "from": { $0[1...] },
        "up_to": { $0[..<2] },
        "through": { $0[...1] },
        "through_last": { $0[...(-1), ...(-1)] },
        "col": { $0[0..., 2] },
        "ellipsis_last": { $0[.ellipsis, 0] },
        "ellipsis_mid": { $0[0, .ellipsis, 1] },
        "new_axis": { $0[.newAxis] },
        "new_axis_mid": { $0[0..., .newAxis, 1] },
        "step": { $0[0..., .slice(nil, nil, 2)] },
        "step_range": { $0[.slice(0, 3, 2), .slice(1, 4, 2)] },
        "neg_from": { $0[(-2)...] },
        "neg_slice": { $0[.all, .slice(1, -1)] },
        "clamped": { $0[.slice(1, 100)] },
        "empty": { $0[.slice(2, 1)] },
        "idx": { $0[torch.tensor([2, 0, 2])] },
        "idx_neg": { $0[torch.tensor([-1, 0])] },
        "idx_2d": { $0[torch.tensor([[0, 1], [2, 0]])] },
        "idx_dim1": { $0[0..., torch.tensor([3, 1])] },
        "idx_last": { $0[.ellipsis, torch.tensor([4, 0, 4])] },
        "idx_adjacent": { $0[.all, torch.tensor([0, 2]), torch.tensor([1, 3])] },
        "idx_nonadjacent": { $0[torch.tensor([0, 2]), .all, torch.tensor([1, 3])] },
        "idx_broadcast": { $0[torch.tensor([[0], [2]]), torch.tensor([1, 3, 0])] },
        "idx_int": { $0[torch.tensor([0, 2]), 1] },
        "int_slice_idx": { $0[1, .all, torch.tensor([1, 3])] },
        "idx_slice": { $0[torch.tensor([2, 0]), 1..<3] },
        "idx_new_axis": { $0[.newAxis, torch.tensor([0, 1]), .ellipsis, torch.tensor([1, 3])] },
        "idx_step": { $0[.slice(nil, nil, 2), torch.tensor([3, 0])] },
        "list": { $0[[2, 0]] },
        "list_bool": { $0[[true, false, true]] },
        "mask_full": { $0[$0 .> 0] },
        "mask_2d": { $0[mask2($0)] },
        "mask_1d": { $0[torch.tensor([true, false, true])] },
        "mask_dim1": { $0[.all, torch.tensor([true, false, true, false])] },
        "mask_int": { $0[mask2($0), 1] },
        "mask_idx": { $0[mask2($0), torch.tensor([1])] },
        "mask_slice": { $0[mask2($0), 1..<4] },
        "bool_scalar": { $0[torch.tensor(true)] },
        "bool_scalar_false": { $0[torch.tensor(false)] },
        "int_scalar_tensor": { $0[torch.tensor(1)] },
        "int_scalar_tensor_idx": { $0[torch.tensor(1), .all, torch.tensor([1, 2])] },
    ]

    /// Expressions that must return views sharing storage.
    private static let viewGetters: Set<String> = [
        "int0", "int_neg", "int_int", "int_int_int", "range", "closed_range", "from", "up_to", "through",
        "through_last", "col", "ellipsis_last", "ellipsis_mid", "new_axis", "new_axis_mid", "step", "step_range",
        "neg_from", "neg_slice", "clamped", "int_scalar_tensor",
    ]

    private static let setters: [String: (Tensor, Tensor?) -> Void] = [
        "set_int_number": { y, _ in y[0] = 1.5 },
        "set_int_tensor": { y, v in y[1] = v! },
        "set_slice": { y, v in y[.all, 1..<3] = v! },
        "set_step": { y, _ in y[.slice(nil, nil, 2), .all, 1] = -1.0 },
        "set_ellipsis": { y, v in y[.ellipsis, 0] = v! },
        "set_mask_number": { y, _ in y[y .< 0] = 0 },
        "set_mask_2d": { y, v in y[mask2(y.detach())] = v! },
        "set_mask_0d_value": { y, v in y[y.detach() .> 3] = v! },
        "set_idx": { y, v in y[torch.tensor([0, 2])] = v! },
        "set_idx_broadcast": { y, v in y[torch.tensor([0, 2])] = v! },
        "set_idx_nonadjacent": { y, v in y[torch.tensor([0, 1]), .all, torch.tensor([2, 4])] = v! },
        "set_idx_slice_number": { y, _ in y[torch.tensor([2, 0]), 1..<3] = 7.0 },
        "set_list": { y, v in y[[0, 2], 1] = v! },
        "set_leading_ones": { y, v in y[0] = v! },
    ]

    private let layouts = ["contiguous", "transposed", "sliced"]

    func testGettersMatchPyTorch() throws {
        let cases = try loadFixtureCases("indexing").filter { ($0["kind"] as! String) == "get" }
        XCTAssertEqual(Set(cases.map { $0["name"] as! String }), Set(Self.getters.keys))
        for c in cases {
            let name = c["name"] as! String
            let f = Self.getters[name]!
            let expected = fixtureTensor(c["output"]!)
            for layout in layouts {
                let x = fixtureTensor(c["input"]!, layout: layout)
                let out = f(x)
                XCTAssertEqual(out.dtype, expected.dtype, "\(name) \(layout)")
                assertClose(out, expected, atol: 0, rtol: 0, "\(name) \(layout)")
                if Self.viewGetters.contains(name) {
                    XCTAssertTrue(out.storage === x.storage, "\(name) should be a view")
                } else if out.numel > 0 {
                    XCTAssertFalse(out.storage === x.storage, "\(name) should copy")
                }
                guard let gradFixture = c["grad"] else { continue }
                let xg = fixtureTensor(c["input"]!, layout: layout).requiresGrad_()
                let y = f(xg)
                let w = fixtureTensor(c["weight"]!)
                let g = torch.autograd.grad([(y * w).sum()], [xg], allowUnused: true)[0] ?? torch.zerosLike(xg)
                assertClose(g, fixtureTensor(gradFixture), atol: 1e-12, "grad \(name) \(layout)")
            }
        }
    }

    func testSettersMatchPyTorch() throws {
        let cases = try loadFixtureCases("indexing").filter { ($0["kind"] as! String) == "set" }
        XCTAssertEqual(Set(cases.map { $0["name"] as! String }), Set(Self.setters.keys))
        for c in cases {
            let name = c["name"] as! String
            let f = Self.setters[name]!
            let expected = fixtureTensor(c["output"]!)
            for layout in layouts {
                // Without autograd, writing through strided storage.
                let plain = fixtureTensor(c["input"]!, layout: layout)
                f(plain, c["value"].map { fixtureTensor($0) })
                assertClose(plain, expected, atol: 0, rtol: 0, "\(name) \(layout)")

                // With autograd: y = x * 1; y[...] = v.
                let x = fixtureTensor(c["input"]!, layout: layout).requiresGrad_()
                let v = c["value"].map { fixtureTensor($0).requiresGrad_() }
                let y = x * 1
                f(y, v)
                assertClose(y, expected, atol: 0, rtol: 0, "\(name) \(layout) autograd")
                XCTAssertEqual(y.gradFn?.name, c["grad_fn"] as? String, name)
                let w = fixtureTensor(c["weight"]!)
                let grads = torch.autograd.grad([(y * w).sum()], [x] + (v.map { [$0] } ?? []), allowUnused: true)
                assertClose(grads[0]!, fixtureTensor(c["grad"]!), atol: 1e-12, "grad \(name)")
                if let v, let vg = c["value_grad"] {
                    assertClose(grads[1] ?? torch.zerosLike(v), fixtureTensor(vg), atol: 1e-12, "value grad \(name)")
                }
            }
        }
    }

    // MARK: - Semantics

    func testViewsAlias() {
        let x = torch.zeros(3, 4)
        let row = x[1]
        row[2] = 5
        XCTAssertEqual(x[1, 2] as Double, 5)
        let col = x[0..., 3]
        col.fill_(7)
        assertClose(x[.all, 3], [7, 7, 7])
        x[.slice(nil, nil, 2), 0] = torch.tensor([1.0, 2.0])
        assertClose(x[.all, 0], [1, 0, 2])
        let copy = x[torch.tensor([0])]
        copy.fill_(-1)
        XCTAssertEqual(x[0, 0] as Double, 1, "advanced indexing copies")
    }

    func testNumbersInAndOut() {
        let x = torch.arange(6).reshape(2, 3)
        let v: Double = x[1, 2]
        XCTAssertEqual(v, 5)
        x[0, 0] = 9
        x[x .> 8] = 4
        let d = 2.9
        x[1] = d                       // converted to int64 like PyTorch
        XCTAssertEqual(x.toArray(as: Int.self), [4, 1, 2, 2, 2, 2])
        let i: Tensor = x[-1, -1]
        XCTAssertEqual(i.dim, 0)
        XCTAssertTrue(x[indices: [1, TensorIndex.ellipsis]].equal(torch.tensor([2, 2, 2])))
    }

    func testRangesAndSlices() {
        let x = torch.arange(10)
        XCTAssertEqual(x[2..<5].toArray(as: Int.self), [2, 3, 4])
        XCTAssertEqual(x[2...4].toArray(as: Int.self), [2, 3, 4])
        XCTAssertEqual(x[...(-1)].toArray(as: Int.self), Array(0..<10))
        XCTAssertEqual(x[(-3)...(-2)].toArray(as: Int.self), [7, 8])
        XCTAssertEqual(x[..<(-7)].toArray(as: Int.self), [0, 1, 2])
        XCTAssertEqual(x[.slice(1, nil, 3)].toArray(as: Int.self), [1, 4, 7])
        XCTAssertEqual(x[.slice(-100, 100, 4)].toArray(as: Int.self), [0, 4, 8])
        XCTAssertEqual(x[.slice(8, 2)].numel, 0)
        XCTAssertEqual(x[.ellipsis].shape, [10])
        XCTAssertEqual(x[.ellipsis].gradFn?.name, nil)
        XCTAssertEqual(x[.newAxis, .ellipsis, .newAxis].shape, [1, 10, 1])
        XCTAssertEqual(torch.tensor(3.0)[.newAxis].shape, [1])
    }

    func testViewGradFnNames() {
        let x = torch.randn(3, 4, requiresGrad: true) * 1
        XCTAssertEqual(x[0].gradFn?.name, "SelectBackward0")
        XCTAssertEqual(x[0...].gradFn?.name, "SliceBackward0")
        XCTAssertEqual(x[.ellipsis].gradFn?.name, "AliasBackward0")
        XCTAssertEqual(x[.newAxis].gradFn?.name, "UnsqueezeBackward0")
        XCTAssertEqual(x[torch.tensor([0, 0])].gradFn?.name, "IndexBackward0")
        XCTAssertEqual(x[x .> 0].gradFn?.name, "IndexBackward0")
    }

    /// The manual-backward tutorial's `grad_h[h < 0] = 0`.
    func testTutorialReluBackward() {
        torch.manualSeed(0)
        let x = torch.randn(8, 5), w1 = torch.randn(5, 6), w2 = torch.randn(6, 2), y = torch.randn(8, 2)
        let h = x.mm(w1)
        let hRelu = h.clamp(min: 0)
        let yPred = hRelu.mm(w2)
        let gradYPred = 2.0 * (yPred - y)
        let gradHRelu = gradYPred.mm(w2.t())
        let gradH = gradHRelu.clone()
        gradH[h .< 0] = 0
        let gradW1 = x.t().mm(gradH)
        // Same thing through autograd.
        let w1g = w1.clone().requiresGrad_()
        let loss = (x.mm(w1g).clamp(min: 0).mm(w2) - y).pow(2).sum()
        loss.backward()
        assertClose(gradW1, w1g.grad!, atol: 1e-4)
        assertClose(gradH, torch.where(h .< 0, torch.zerosLike(gradHRelu), gradHRelu), atol: 0)
    }

    func testGradcheck() {
        let x = torch.randn(3, 4, 5, dtype: .float64)
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0][0, .all, torch.tensor([1, 1, 0])] }
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0][torch.tensor([0, 2, 0]), .all, torch.tensor([1, 3, 4])] }
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0][xs[0].detach() .> 0] }
        gradcheck([x]) { (xs: [Tensor]) -> Tensor in xs[0][.slice(nil, nil, 2), .newAxis, 1, .slice(1, nil)] }
        gradcheck([x, torch.randn(2, 5, dtype: .float64)]) { xs in
            let y = xs[0] * 1
            y[1, torch.tensor([3, 0])] = xs[1]
            return y
        }
        gradcheck([x, torch.randn(5, dtype: .float64)]) { xs in
            let y = xs[0] * 1
            y[.ellipsis, 2] = xs[1][..<4]
            return y.exp()
        }
    }

    func testDoubleBackwardThroughIndexing() {
        let x = torch.tensor([1.0, 2.0, 3.0], dtype: .float64, requiresGrad: true)
        let y = x[torch.tensor([0, 0, 2])].pow(2).sum()
        let g = torch.autograd.grad([y], [x], createGraph: true)[0]!
        assertClose(g, [4, 0, 6])                  // 2 * x * count
        let gg = torch.autograd.grad([g.sum()], [x])[0]!
        assertClose(gg, [4, 0, 2])
    }

    func testSetitemVersionAndHistory() {
        let x = torch.zeros(4)
        let v0 = x.storage.version
        x[1..<3] = torch.tensor([1.0, 2.0])
        XCTAssertGreaterThan(x.storage.version, v0)
        // A plain tensor assigned a value that requires grad joins the graph.
        let w = torch.tensor(3.0, requiresGrad: true)
        let z = torch.zeros(3)
        z[torch.tensor([0, 2])] = w
        XCTAssertEqual(z.gradFn?.name, "IndexPutBackward0")
        z.sum().backward()
        assertClose(w.grad!, [2])
    }

    func testOverlappingAssignment() {
        let x = torch.arange(6).double()
        x[1...] = x[..<5]
        XCTAssertEqual(x.toArray(as: Int.self), [0, 0, 1, 2, 3, 4])
        let y = torch.arange(5).double()
        y[torch.tensor([1, 2, 3, 4])] = y[..<4]
        XCTAssertEqual(y.toArray(as: Int.self), [0, 0, 1, 2, 3])
    }

    func testLargeAdvancedIndexing() {
        torch.manualSeed(1)
        let x = torch.randn(300, 200)
        let idx = torch.randint(0, 300, [5000])
        let got = x[idx]
        let xs = x.toArray(as: Float.self), ids = idx.toArray(as: Int.self), gs = got.toArray(as: Float.self)
        for (r, i) in ids.enumerated() where Array(gs[(r * 200)..<(r * 200 + 200)]) != Array(xs[(i * 200)..<(i * 200 + 200)]) {
            XCTFail("row \(r)"); break
        }
        let m = x .> 0.5
        XCTAssertEqual(x[m].numel, Int(m.sum().item()))
        assertClose(x[m].sum(), (x * m.float()).sum(), atol: 1e-2)
    }

    func testMessages() {
        XCTAssertEqual(indexOutOfBoundsMessage(index: 5, dim: 0, size: 3), "index 5 is out of bounds for dimension 0 with size 3")
        XCTAssertEqual(tooManyIndicesMessage(rank: 3), "too many indices for tensor of dimension 3")
        XCTAssertEqual(maskShapeMismatchMessage(mask: [3, 2], maskDim: 0, indexed: [2, 3, 4], indexedDim: 0),
                       "The shape of the mask [3, 2] at index 0 does not match the shape of the indexed tensor [2, 3, 4] at index 0")
        XCTAssertEqual(indexPutShapeMismatchMessage(valueShape: [3], resultShape: [2, 3, 4]),
                       "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2, 3, 4]")
        XCTAssertEqual(indexBroadcastMessage([[2], [3]]),
                       "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]")
        XCTAssertEqual(indexDTypeMessage, "tensors used as indices must be long, int, byte or bool tensors")
        XCTAssertEqual(clampSlice(-100, 100, size: 5).0, 0)
        XCTAssertEqual(clampSlice(4, 2, size: 5).1, 4)
    }
}
