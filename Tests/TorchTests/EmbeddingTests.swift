import XCTest
@testable import Torch

/// nn.Embedding / F.embedding against PyTorch: lookups, gradients with padding_idx, repeated
/// indices and scale_grad_by_freq, max_norm renormalisation, seeded initialisation, reprs.
final class EmbeddingTests: XCTestCase {
    private func cases(_ kind: String) throws -> [[String: Any]] {
        try loadFixtureCases("norm_layers").filter { $0["kind"] as? String == kind }
    }

    func testForwardBackwardMatchPyTorch() throws {
        let all = try cases("embedding")
        XCTAssertEqual(all.count, 5)
        for c in all {
            let pad = c["padding_idx"] as? Int, scale = c["scale_grad_by_freq"] as! Bool
            let label = "padding_idx=\(String(describing: pad)) scale=\(scale)"
            for indexType in [DType.int64, .int32] {
                let w = fixtureTensor(c["weight"]!).requiresGrad_()
                let idx = fixtureTensor(c["indices"]!).to(indexType)
                let y = F.embedding(idx, w, paddingIdx: pad, scaleGradByFreq: scale)
                XCTAssertEqual(y.gradFn?.name, c["grad_fn"] as? String)
                assertClose(y, fixtureTensor(c["output"]!), atol: 0, rtol: 0, label)
                y.backward(fixtureTensor(c["grad_output"]!))
                assertClose(w.grad!, fixtureTensor(c["grad_weight"]!), atol: 1e-6, rtol: 1e-6, "\(label) grad")
            }
            // The module gives the same, through its own weight.
            let m = nn.Embedding.fromPretrained(fixtureTensor(c["weight"]!), freeze: false, paddingIdx: pad, scaleGradByFreq: scale)
            let y = m(fixtureTensor(c["indices"]!))
            y.backward(fixtureTensor(c["grad_output"]!))
            assertClose(m.weight.grad!, fixtureTensor(c["grad_weight"]!), atol: 1e-6, rtol: 1e-6, "\(label) module")
        }
    }

    func testMaxNormRenormalisesReferencedRows() throws {
        for c in try cases("embedding_max_norm") {
            let w = fixtureTensor(c["weight"]!)
            let y = F.embedding(fixtureTensor(c["indices"]!), w, maxNorm: c["max_norm"] as? Double, normType: c["norm_type"] as! Double)
            assertClose(y, fixtureTensor(c["output"]!), atol: 1e-6, rtol: 1e-6)
            assertClose(w, fixtureTensor(c["weight_after"]!), atol: 1e-6, rtol: 1e-6)
        }
    }

    func testSeededInitialisationAndRepr() throws {
        for c in try cases("embedding_init") {
            torch.manualSeed(0)
            let m = nn.Embedding(c["num_embeddings"] as! Int, c["embedding_dim"] as! Int, paddingIdx: c["padding_idx"] as? Int)
            assertClose(m.weight, fixtureTensor(c["weight"]!), atol: 0, rtol: 0, c["repr"] as! String)
            XCTAssertEqual(m.description, c["repr"] as! String)
        }
        let r = try cases("embedding_repr")[0]["repr"] as! String
        XCTAssertEqual(nn.Embedding(10, 3, paddingIdx: 0, maxNorm: 1, normType: 1, scaleGradByFreq: true).description, r)
        XCTAssertEqual(nn.Embedding(7, 6, paddingIdx: -2).paddingIdx, 5)
    }

    func testPaddingRowGetsNoGradientAndModuleState() {
        let m = nn.Embedding(5, 3, paddingIdx: 1)
        XCTAssertEqual(m.weight.select(0, 1).toArray(as: Float.self), [0, 0, 0])
        XCTAssertEqual(m.stateDict().keys, ["weight"])
        let y = m(torch.tensor([[1, 2, 1], [4, 1, 2]]))
        XCTAssertEqual(y.shape, [2, 3, 3])
        (y * y + y).sum().backward()
        XCTAssertEqual(m.weight.grad!.select(0, 1).toArray(as: Float.self), [0, 0, 0])
        XCTAssertEqual(m.weight.grad!.select(0, 0).toArray(as: Float.self), [0, 0, 0])
        // Row 2 appears twice: gradient 2·(2w + 1).
        let w2 = m.weight.detach().select(0, 2)
        assertClose(m.weight.grad!.select(0, 2), (w2 * 2 + 1) * 2, atol: 1e-6)
        // 0-d and 1-d indices.
        XCTAssertEqual(m(torch.tensor(3)).shape, [3])
        XCTAssertEqual(m(torch.tensor([3])).shape, [1, 3])
        // fromPretrained shares storage and is frozen by default.
        let table = torch.randn(4, 2)
        let pre = nn.Embedding.fromPretrained(table)
        XCTAssertFalse(pre.weight.requiresGrad)
        XCTAssertTrue(pre.weight.storage === table.storage)
        XCTAssertNil(pre(torch.tensor([0, 3])).gradFn)
        XCTAssertEqual(pre.description, "Embedding(4, 2)")
    }

    func testGradcheckAndSecondOrder() {
        let idx = torch.tensor([[0, 2, 2], [3, 1, 0]])
        let w = torch.randn(4, 3, dtype: .float64)
        gradcheck([w]) { F.embedding(idx, $0[0]) }
        // (paddingIdx and scaleGradByFreq change the gradient on purpose: covered by the fixtures.)
        // The backward is linear in the incoming gradient and differentiable when recorded.
        gradcheck([w]) { xs in
            torch.enableGrad {
                let y = F.embedding(idx, xs[0], paddingIdx: 1)
                return torch.autograd.grad([(y * y * y).sum()], [xs[0]], createGraph: true)[0]!
            }
        }
    }

    func testLargeLookupMatchesGather() {
        let w = torch.randn(1000, 64)
        let idx = torch.randint(0, 1000, [32, 50])
        let y = F.embedding(idx, w)
        let ref = w.gather(0, idx.reshape(-1, 1).expand(-1, 64)).reshape(32, 50, 64)
        assertClose(y, ref, atol: 0, rtol: 0)
        let leaf = w.clone().requiresGrad_()
        let g = torch.randn(32, 50, 64)
        F.embedding(idx, leaf).backward(g)
        let expected = torch.zeros(1000, 64).scatterAdd(0, idx.reshape(-1, 1).expand(-1, 64), g.reshape(-1, 64))
        assertClose(leaf.grad!, expected, atol: 1e-5, rtol: 1e-5)
    }

    func testMessages() {
        XCTAssertEqual(embeddingIndexErrorMessage, "index out of range in self")
    }
}
