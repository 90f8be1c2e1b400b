import XCTest
@testable import Torch

// MARK: - Fixture runner shared with EinsumTests

private func ordArg(_ v: Any?) -> torch.linalg.NormOrder? {
    switch v {
    case let s as String:
        switch s {
        case "inf": return .infinity
        case "-inf": return -.infinity
        case "fro": return .fro
        case "nuc": return .nuc
        default: XCTFail("unknown ord \(s)"); return nil
        }
    case let n as NSNumber: return .p(n.doubleValue)
    default: return nil
    }
}

private func ordDouble(_ v: Any?) -> Double {
    guard case .p(let p)? = ordArg(v) else { XCTFail("vector ord must be numeric"); return 2 }
    return p
}

private func intList(_ v: Any?) -> [Int]? { (v as? [NSNumber])?.map(\.intValue) }
private func optDouble(_ v: Any?) -> Double? { (v as? NSNumber)?.doubleValue }

/// `(U[..., :k] * c) @ U[..., :k]ᵀ` with c = 1…k: a sign-invariant function of singular/eigen vectors.
func weightedProjector(_ U: Tensor, _ k: Int) -> Tensor {
    let c = torch.arange(1, k + 1).to(U.dtype)
    let uk = U.narrow(-1, 0, k)
    return (uk * c).matmul(uk.mT)
}

/// The outputs of fixture op `op` (the names scripts/fixtures/linalg.py uses).
func linalgFixtureOutputs(_ op: String, _ args: [String: Any], _ xs: [Tensor]) -> [String: Tensor] {
    let a = xs[0]
    switch op {
    case "det": return ["det": torch.linalg.det(a)]
    case "det_legacy": return ["det": torch.det(a)]
    case "slogdet":
        let (s, l) = torch.linalg.slogdet(a)
        return ["sign": s, "logabsdet": l]
    case "logdet": return ["logdet": torch.logdet(a)]
    case "inv": return ["inv": torch.linalg.inv(a)]
    case "inverse": return ["inv": a.inverse()]
    case "solve": return ["X": torch.linalg.solve(a, xs[1])]
    case "svd":
        let (U, S, Vh) = torch.linalg.svd(a, fullMatrices: args["full_matrices"] as! Bool)
        let k = S.shape.last!
        let uk = U.narrow(-1, 0, k), vhk = Vh.narrow(-2, 0, k)
        return ["S": S, "U": uk, "Vh": vhk, "UcUt": weightedProjector(U, k), "VcVt": weightedProjector(Vh.mT, k),
                "recon": (uk * S.unsqueeze(-2)).matmul(vhk)]
    case "svd_legacy":
        let (U, S, V) = torch.svd(a, some: args["some"] as! Bool)
        let k = S.shape.last!
        return ["S": S, "U": U.narrow(-1, 0, k), "V": V.narrow(-1, 0, k), "UcUt": weightedProjector(U, k),
                "VcVt": weightedProjector(V, k)]
    case "svdvals": return ["S": torch.linalg.svdvals(a)]
    case "eigh":
        let (L, V) = torch.linalg.eigh(a, UPLO: args["UPLO"] as! String)
        return ["L": L, "V": V, "VcVt": weightedProjector(V, L.shape.last!)]
    case "eigvalsh": return ["L": torch.linalg.eigvalsh(a, UPLO: args["UPLO"] as! String)]
    case "eig":
        let r = torch.linalg.eig(a)
        return ["wr": r.eigenvaluesReal, "wi": r.eigenvaluesImag, "vr": r.eigenvectorsReal, "vi": r.eigenvectorsImag]
    case "eigvals":
        let (wr, wi) = torch.linalg.eigvals(a)
        return ["wr": wr, "wi": wi]
    case "vector_norm":
        return ["out": torch.linalg.vectorNorm(a, ord: ordDouble(args["ord"]), dim: intList(args["dim"]),
                                               keepdim: args["keepdim"] as! Bool)]
    case "matrix_norm":
        return ["out": torch.linalg.matrixNorm(a, ord: ordArg(args["ord"])!, dim: intList(args["dim"])!,
                                               keepdim: args["keepdim"] as! Bool)]
    case "norm":
        return ["out": torch.linalg.norm(a, ord: ordArg(args["ord"]), dim: intList(args["dim"]), keepdim: args["keepdim"] as! Bool)]
    case "matrix_rank":
        return ["rank": torch.linalg.matrixRank(a, atol: optDouble(args["atol"]), rtol: optDouble(args["rtol"]),
                                                hermitian: args["hermitian"] as! Bool)]
    case "pinv": return ["pinv": torch.linalg.pinv(a)]
    case "pinverse": return ["pinv": a.pinverse()]
    case "cholesky": return ["L": torch.linalg.cholesky(a, upper: args["upper"] as! Bool)]
    case "qr":
        let (Q, R) = torch.linalg.qr(a, mode: args["mode"] as! String)
        return ["Q": Q, "R": R]
    case "cross": return ["out": torch.linalg.cross(a, xs[1], dim: (args["dim"] as! NSNumber).intValue)]
    case "einsum": return ["out": torch.einsum(args["equation"] as! String, xs)]
    default:
        XCTFail("unknown fixture op \(op)")
        return [:]
    }
}

/// Recomputes a fixture case with inputs in `layout`, compares outputs and input gradients.
func checkLinalgFixtureCase(_ c: [String: Any], layout: String, file: StaticString = #filePath, line: UInt = #line) {
    let name = "\(c["name"] as! String) [\(layout)]"
    let op = c["op"] as! String
    let args = c["args"] as? [String: Any] ?? [:]
    let atol = (c["atol"] as! NSNumber).doubleValue, rtol = (c["rtol"] as! NSNumber).doubleValue
    let absNames = Set(c["abs"] as? [String] ?? [])
    let wantGrads = c["grads"] as? [Any]
    let xs = (c["inputs"] as! [Any]).map { raw -> Tensor in
        let t = fixtureTensor(raw, layout: layout)
        return wantGrads != nil ? t.requiresGrad_() : t
    }
    let outs = linalgFixtureOutputs(op, args, xs)
    for (key, rawExpected) in c["outputs"] as! [String: Any] {
        let expected = fixtureTensor(rawExpected)
        guard let got = outs[key] else { XCTFail("\(name): missing output \(key)", file: file, line: line); continue }
        XCTAssertEqual(got.dtype, expected.dtype, "\(name) \(key) dtype", file: file, line: line)
        if absNames.contains(key) {
            assertClose(got.detach().abs(), expected.abs(), atol: atol * 10, rtol: rtol * 10, "\(name) |\(key)|", file: file, line: line)
        } else {
            assertClose(got.detach(), expected, atol: atol, rtol: rtol, "\(name) \(key)", file: file, line: line)
        }
    }
    guard let wantGrads, let weights = c["weights"] as? [String: Any] else { return }
    var loss: Tensor? = nil
    for (key, w) in weights {
        let term = (outs[key]! * fixtureTensor(w)).sum()
        loss = loss.map { $0 + term } ?? term
    }
    let grads = torch.autograd.grad([loss!], xs, allowUnused: true)
    for (i, raw) in wantGrads.enumerated() {
        guard !(raw is NSNull) else { continue }
        guard let g = grads[i] else { XCTFail("\(name): no gradient for input \(i)", file: file, line: line); continue }
        assertClose(g, fixtureTensor(raw), atol: atol * 10, rtol: rtol * 10, "\(name) grad \(i)", file: file, line: line)
    }
}

final class LinalgTests: XCTestCase {
    func testFixtures() throws {
        let cases = try loadFixtureCases("linalg").filter { ($0["op"] as! String) != "einsum" }
        XCTAssertGreaterThan(cases.count, 100)
        for c in cases {
            for layout in ["contiguous", "transposed", "sliced"] { checkLinalgFixtureCase(c, layout: layout) }
        }
    }

    // MARK: Seed tutorial (001): the matrix functions' examples

    func testSeedTutorialMatrixFunctions() {
        let a = torch.tensor([[1, 2], [3, 4]]).float()
        assertClose(torch.det(a), [-2], atol: 1e-5)
        assertClose(torch.inverse(a), [-2, 1, 1.5, -0.5], atol: 1e-5)
        let (U, S, V) = torch.svd(a)
        assertClose(S, [5.4650, 0.3660], atol: 1e-4)
        assertClose(U.abs(), [0.4046, 0.9145, 0.9145, 0.4046], atol: 1e-4)
        assertClose(V.abs(), [0.5760, 0.8174, 0.8174, 0.5760], atol: 1e-4)
        assertClose((U * S.unsqueeze(0)).matmul(V.t()), a, atol: 1e-5)
        // Legacy torch.eig: n×2 (real, imag) rows in LAPACK order, empty eigenvectors by default.
        let (values, vectors) = torch.eig(a)
        XCTAssertEqual(values.shape, [2, 2])
        assertClose(values, [-0.3722813, 0, 5.3722813, 0], atol: 1e-5)
        XCTAssertEqual(vectors.numel, 0)
        let e = torch.einsum("ij,jk->ik", torch.tensor([[1, 2], [3, 4]]), torch.tensor([[5, 6], [7, 8]]))
        XCTAssertEqual(e.dtype, .int64)
        XCTAssertEqual(e.toArray(as: Int64.self), [19, 22, 43, 50])
    }

    func testLegacyEigPackedVectors() {
        // Eigenvalues ±2i and 3: columns 0/1 are the real/imaginary parts of the vector of 2i.
        let a = torch.tensor([[0.0, -2.0, 1.0], [2.0, 0.0, 0.5], [0.0, 0.0, 3.0]])
        let (w, v) = torch.eig(a, eigenvectors: true)
        let wv = w.toArray(as: Double.self)
        XCTAssertEqual(wv[1], 2, accuracy: 1e-12)
        XCTAssertEqual(wv[3], -2, accuracy: 1e-12)
        // A (x + iy) = 2i (x + iy)  ⇔  A x = -2 y, A y = 2 x.
        let x = v.select(1, 0), y = v.select(1, 1)
        assertClose(a.mv(x), -2 * y, atol: 1e-12)
        assertClose(a.mv(y), 2 * x, atol: 1e-12)
        let v3 = v.select(1, 2)
        assertClose(a.mv(v3), 3 * v3, atol: 1e-12)
    }

    func testEigDecompositionReconstructs() {
        let a = torch.randn(2, 5, 5, dtype: .float64, generator: Generator().manualSeed(3))
        let r = torch.linalg.eig(a)
        // A V = V diag(w) in complex arithmetic on (re, im) parts.
        let vr = r.eigenvectorsReal, vi = r.eigenvectorsImag
        let wr = r.eigenvaluesReal.unsqueeze(-2), wi = r.eigenvaluesImag.unsqueeze(-2)
        assertClose(a.matmul(vr), vr * wr - vi * wi, atol: 1e-10)
        assertClose(a.matmul(vi), vr * wi + vi * wr, atol: 1e-10)
    }

    func testGradFnNames() {
        let a = (torch.randn(3, 3, dtype: .float64, generator: Generator().manualSeed(1)) + torch.eye(3, dtype: .float64) * 3).requiresGrad_()
        XCTAssertEqual(torch.linalg.det(a).gradFn?.name, "LinalgDetBackward0")
        XCTAssertEqual(torch.linalg.slogdet(a).logabsdet.gradFn?.name, "LinalgSlogdetBackward0")
        XCTAssertFalse(torch.linalg.slogdet(a).sign.requiresGrad)
        XCTAssertEqual(torch.linalg.inv(a).gradFn?.name, "LinalgInvExBackward0")
        XCTAssertEqual(torch.linalg.solve(a, torch.ones(3, dtype: .float64)).gradFn?.name, "LinalgSolveExBackward0")
        XCTAssertEqual(torch.linalg.svd(a).S.gradFn?.name, "LinalgSvdBackward0")
        XCTAssertEqual(torch.linalg.svdvals(a).gradFn?.name, "LinalgSvdBackward0")
        XCTAssertEqual(torch.linalg.eigh(a).eigenvectors.gradFn?.name, "LinalgEighBackward0")
        XCTAssertEqual(torch.linalg.pinv(a).gradFn?.name, "LinalgPinvBackward0")
        XCTAssertEqual(torch.linalg.vectorNorm(a).gradFn?.name, "LinalgVectorNormBackward0")
        XCTAssertEqual(torch.linalg.qr(a).Q.gradFn?.name, "LinalgQrBackward0")
        XCTAssertEqual(torch.linalg.cross(a, a).gradFn?.name, "LinalgCrossBackward0")
        XCTAssertEqual(torch.linalg.cholesky(a.matmul(a.mT)).gradFn?.name, "LinalgCholeskyExBackward0")
        XCTAssertFalse(torch.linalg.eig(a).eigenvaluesReal.requiresGrad)
    }

    // MARK: Gradient checks (float64 central differences)

    private func wellConditioned(_ shape: Int..., seed: UInt64) -> Tensor {
        let n = shape.last!
        return torch.randn(shape, dtype: .float64, generator: Generator().manualSeed(seed)) + torch.eye(n, dtype: .float64) * 3
    }

    private func randn(_ shape: Int..., seed: UInt64) -> Tensor {
        torch.randn(shape, dtype: .float64, generator: Generator().manualSeed(seed))
    }

    func testGradcheckDetInvSolve() {
        gradcheck([wellConditioned(2, 3, 3, seed: 1)]) { torch.linalg.det($0[0]) }
        gradcheck([wellConditioned(3, 3, seed: 2)]) { torch.linalg.slogdet($0[0]).logabsdet }
        gradcheck([wellConditioned(3, 3, seed: 12)]) { torch.logdet($0[0].matmul($0[0].mT)) }
        gradcheck([wellConditioned(2, 3, 3, seed: 3)]) { torch.linalg.inv($0[0]) }
        gradcheck([wellConditioned(3, 3, seed: 4), randn(3, seed: 5)]) { torch.linalg.solve($0[0], $0[1]) }
        gradcheck([wellConditioned(2, 1, 3, 3, seed: 6), randn(4, 3, 2, seed: 7)]) { torch.linalg.solve($0[0], $0[1]) }
        gradcheck([wellConditioned(2, 3, 3, seed: 8), randn(2, 3, seed: 9)]) { torch.linalg.solve($0[0], $0[1]) }
    }

    func testDetGradientOfSingularMatrixIsCofactor() {
        let a = torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype: .float64).requiresGrad_()
        torch.linalg.det(a).backward()
        assertClose(a.grad!, [4, -2, -2, 1], atol: 1e-12)
        let b = torch.zeros(3, 3, dtype: .float64).requiresGrad_()
        torch.linalg.det(b).backward()
        assertClose(b.grad!, [Double](repeating: 0, count: 9), atol: 1e-12)
    }

    /// Checks the Hessian-vector product of scalar `f` (a double backward) against central differences
    /// of its gradient.
    private func gradgradcheck(_ x0: Tensor, eps: Double = 1e-6, atol: Double = 1e-5, rtol: Double = 1e-4,
                               file: StaticString = #filePath, line: UInt = #line, _ f: (Tensor) -> Tensor) {
        let x = x0.double().detach().contiguousCopy().requiresGrad_()
        let w = torch.randn(x.shape, dtype: .float64, generator: Generator().manualSeed(99))
        let g = torch.autograd.grad([f(x)], [x], createGraph: true)[0]!
        let hw = torch.autograd.grad([(g * w).sum()], [x])[0]!.toArray(as: Double.self)
        func gradAt(_ delta: Double, _ i: Int) -> Double {
            let y = x.detach().contiguousCopy()
            y.storage.data.assumingMemoryBound(to: Double.self)[i] += delta
            y.requiresGrad_()
            return (torch.autograd.grad([f(y)], [y])[0]! * w).sum().item()
        }
        for i in 0..<x.numel {
            let numeric = (gradAt(eps, i) - gradAt(-eps, i)) / (2 * eps)
            if abs(numeric - hw[i]) > atol + rtol * abs(numeric) {
                XCTFail("gradgradcheck element \(i): analytic \(hw[i]) vs numeric \(numeric)", file: file, line: line)
                return
            }
        }
    }

    func testSecondDerivatives() {
        let w = randn(3, 3, seed: 10)
        gradgradcheck(wellConditioned(3, 3, seed: 11)) { (torch.linalg.inv($0) * w).sum() }
        gradgradcheck(wellConditioned(3, 3, seed: 13)) { torch.linalg.det($0) }
        gradgradcheck(wellConditioned(2, 3, 3, seed: 15)) { torch.linalg.solve($0, w).sum() }
        gradgradcheck(randn(3, 3, seed: 14)) { x in
            (torch.linalg.eigvalsh(x + x.mT) * torch.tensor([1.0, 2.0, 3.0], dtype: .float64)).sum()
        }
        gradgradcheck(randn(3, 3, seed: 16)) { torch.linalg.svdvals($0).sum() }
        gradgradcheck(randn(3, 4, seed: 17)) { torch.einsum("ij,kj->", $0, $0) }
    }

    func testSingularSlogdet() {
        let (s, l) = torch.linalg.slogdet(torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype: .float64))
        XCTAssertEqual(s.item(), 0)
        XCTAssertEqual(l.item(), -.infinity)
        XCTAssertEqual(torch.logdet(torch.tensor([[0.0, 1.0], [1.0, 0.0]])).item().isNaN, true)
    }

    func testGradcheckSVD() {
        for shape in [[3, 3], [4, 3], [3, 5], [2, 4, 3]] {
            let a = torch.randn(shape, dtype: .float64, generator: Generator().manualSeed(20))
            gradcheck([a]) { torch.linalg.svdvals($0[0]) }
            gradcheck([a]) { torch.linalg.svd($0[0], fullMatrices: false).S }
            gradcheck([a]) { xs in
                let (U, S, Vh) = torch.linalg.svd(xs[0], fullMatrices: false)
                let k = S.shape.last!
                return weightedProjector(U, k) + weightedProjector(Vh.mT, k).sum() + (U * S.pow(2).unsqueeze(-2)).matmul(Vh).sum()
            }
            gradcheck([a]) { xs in
                let (U, S, Vh) = torch.linalg.svd(xs[0], fullMatrices: true)
                let k = S.shape.last!
                return weightedProjector(U, k).sum() + weightedProjector(Vh.mT, k).sum() + S.sum()
            }
        }
    }

    func testGradcheckEigh() {
        let x = randn(2, 4, 4, seed: 30)
        gradcheck([x]) { torch.linalg.eigvalsh($0[0] + $0[0].mT) }
        gradcheck([x]) { xs in
            let (L, V) = torch.linalg.eigh(xs[0] + xs[0].mT)
            return weightedProjector(V, 4).sum() + L
        }
        gradcheck([x]) { xs in
            let (L, V) = torch.linalg.eigh(xs[0] + xs[0].mT, UPLO: "U")
            return weightedProjector(V, 4) + L.sum()
        }
    }

    func testGradcheckPinvCholeskyQRCross() {
        gradcheck([randn(4, 3, seed: 40)]) { torch.linalg.pinv($0[0]) }
        gradcheck([randn(2, 2, 4, seed: 41)]) { torch.linalg.pinv($0[0]) }
        gradcheck([randn(3, 3, seed: 42)]) { xs in
            torch.linalg.cholesky(xs[0].matmul(xs[0].mT) + torch.eye(3, dtype: .float64) * 3)
        }
        gradcheck([randn(3, 3, seed: 43)]) { xs in
            torch.linalg.cholesky(xs[0].matmul(xs[0].mT) + torch.eye(3, dtype: .float64) * 3, upper: true)
        }
        for shape in [[5, 3], [3, 3], [3, 5]] {
            let a = torch.randn(shape, dtype: .float64, generator: Generator().manualSeed(44))
            gradcheck([a]) { torch.linalg.qr($0[0]).Q }
            gradcheck([a]) { torch.linalg.qr($0[0]).R }
        }
        gradcheck([randn(4, 3, seed: 45), randn(1, 3, seed: 46)]) { torch.linalg.cross($0[0], $0[1]) }
    }

    func testGradcheckNorms() {
        let x = randn(3, 4, seed: 50)
        for p in [2.0, 1.0, 3.0, 0.5, .infinity, -.infinity] {
            gradcheck([x]) { torch.linalg.vectorNorm($0[0], ord: p) }
            gradcheck([x]) { torch.linalg.vectorNorm($0[0], ord: p, dim: [1], keepdim: true) }
        }
        let orders: [torch.linalg.NormOrder] = ["fro", "nuc", 1, -1, 2, -2, .infinity, -.infinity]
        for o in orders {
            gradcheck([randn(2, 3, 4, seed: 51)]) { torch.linalg.matrixNorm($0[0], ord: o) }
        }
        gradcheck([x]) { torch.linalg.norm($0[0]) }
        // The 2-norm has a zero (not NaN) gradient at the origin, like PyTorch.
        let z = torch.zeros(3, dtype: .float64).requiresGrad_()
        torch.linalg.vectorNorm(z).backward()
        assertClose(z.grad!, [0, 0, 0])
    }

    func testNormOrderSpelling() {
        let a = torch.tensor([[1.0, -2.0], [3.0, 4.0]])
        assertClose(torch.linalg.norm(a, ord: -.infinity), [3])
        assertClose(torch.linalg.norm(a, ord: .infinity), [7])
        assertClose(torch.linalg.norm(a, ord: "fro"), [(30.0).squareRoot()])
        assertClose(torch.linalg.norm(a, dim: 1), [(5.0).squareRoot(), 5])
        assertClose(torch.linalg.norm(a.select(0, 1), ord: 1), [7])
        XCTAssertEqual("\(torch.linalg.NormOrder.p(-.infinity))", "-inf")
    }

    func testMatrixRankAndPinvProperties() {
        let a = torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
        XCTAssertEqual(torch.linalg.matrixRank(a).item(as: Int64.self), 2)
        XCTAssertEqual(torch.linalg.matrixRank(a, atol: 100).item(as: Int64.self), 0)
        let p = torch.linalg.pinv(a)
        assertClose(a.matmul(p).matmul(a), a, atol: 1e-5)
        assertClose(p.matmul(a).matmul(p), p, atol: 1e-5)
    }

    func testCrossLegacyDefaultDim() {
        let a = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]), b = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
        // torch.cross without dim uses the first dim of size 3 (dim 0 here).
        assertClose(torch.cross(a, b), [0, 1, 0, 0, 1, 0])
        assertClose(a.cross(b, dim: 0), torch.linalg.cross(a, b, dim: 0))
    }

    // MARK: Messages (the preconditions use exactly these strings)

    func testMessages() {
        XCTAssertEqual(linalgDTypeMessage("linalg.det", .int64), "linalg.det: Expected a floating point or complex tensor as input. Got Long")
        XCTAssertNil(linalgDTypeMessage("linalg.det", .float32))
        XCTAssertEqual(linalgShapeMessage("linalg.inv", [2, 3], square: true), "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices")
        XCTAssertEqual(linalgShapeMessage("linalg.det", [3], square: true), "linalg.det: The input tensor A must have at least 2 dimensions.")
        XCTAssertNil(linalgShapeMessage("linalg.svd", [2, 3], square: false))
        XCTAssertEqual(linalgSingularInverseMessage(batchShape: [], batchIndex: 0, pivot: 2),
                       "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular.")
        XCTAssertEqual(linalgSingularInverseMessage(batchShape: [2], batchIndex: 1, pivot: 1),
                       "linalg.inv: (Batch element 1): The diagonal element 1 is zero, the inversion could not be completed because the input matrix is singular.")
        XCTAssertEqual(linalgSingularSolveMessage(batchShape: [], batchIndex: 0),
                       "torch.linalg.solve: The solver failed because the input matrix is singular.")
        XCTAssertEqual(linalgSolveShapeMessage([3, 3], [4, 1]), "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x1)")
        XCTAssertEqual(linalgCholeskyMessage(batchShape: [], batchIndex: 0, order: 2),
                       "linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the leading minor of order 2 is not positive-definite).")
        XCTAssertEqual(linalgUPLOMessage("X"), "Expected UPLO argument to be 'L' or 'U', but got X")
        XCTAssertNil(linalgUPLOMessage("u"))
    }
}
