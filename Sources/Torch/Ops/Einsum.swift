/// `torch.einsum`: Einstein summation over any number of operands.
///
/// The equation is parsed and checked like PyTorch's (same messages); then each operand takes the
/// diagonal of its repeated subscripts, subscripts that appear in one operand only (and not in the
/// output) are summed out, and operands are contracted left to right, each pair by permute/reshape
/// into one batched matrix product (`bmm`), or a broadcast multiply when nothing is contracted.
/// Everything goes through differentiable ops, so einsum is differentiable (also twice).

/// A malformed equation or operands that don't fit it; `message` is PyTorch's.
struct EinsumError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// A parsed and checked equation: every operand dim and output dim gets a label; letters are
/// 0..<52 (A-Z then a-z, PyTorch's order), the ellipsis' dims are 52 + j (right-aligned).
struct EinsumPlan {
    var operandLabels: [[Int]]
    var outputLabels: [Int]
    /// Size of each label (the broadcast size over operands).
    var sizes: [Int: Int]

    static let ellipsisBase = 52
    private static let ellipsisMarker = -1

    private static func labelIndex(_ c: Character) -> Int? {
        guard let a = c.asciiValue else { return nil }
        if a >= 65 && a <= 90 { return Int(a) - 65 }
        if a >= 97 && a <= 122 { return Int(a) - 97 + 26 }
        return nil
    }

    private static func labelName(_ l: Int) -> String {
        l < 26 ? String(UnicodeScalar(UInt8(65 + l))) : String(UnicodeScalar(UInt8(97 + l - 26)))
    }

    /// Parses `equation` for operands of `shapes`, throwing PyTorch's message when it doesn't fit.
    static func make(_ equation: String, shapes: [[Int]]) throws -> EinsumPlan {
        let fail = { (m: String) in EinsumError(message: "einsum(): " + m) }
        guard !shapes.isEmpty else {
            throw fail("must specify the equation string and at least one operand, or at least one operand and its subscripts list")
        }
        let chars = Array(equation)
        var arrow: Int? = nil
        if chars.count >= 2 { for i in 0..<(chars.count - 1) where chars[i] == "-" && chars[i + 1] == ">" { arrow = i; break } }
        let lhs = Array(chars[..<(arrow ?? chars.count)])

        // Operand subscripts, with ellipsisMarker for "...".
        var opLabels: [[Int]] = [[]]
        var foundEllipsis = false
        var i = 0
        while i < lhs.count {
            let c = lhs[i]
            switch c {
            case " ": break
            case ".":
                let op = opLabels.count - 1
                if foundEllipsis { throw fail("found '.' for operand \(op) for which an ellipsis was already found") }
                guard i + 2 < lhs.count, lhs[i + 1] == ".", lhs[i + 2] == "." else {
                    throw fail("found '.' for operand \(op) that is not part of any ellipsis")
                }
                i += 2
                opLabels[op].append(ellipsisMarker)
                foundEllipsis = true
            case ",":
                opLabels.append([])
                if opLabels.count > shapes.count { throw fail("fewer operands were provided than specified in the equation") }
                foundEllipsis = false
            default:
                guard let l = labelIndex(c) else {
                    throw fail("invalid subscript given at index \(i) in the equation string, subscripts must be in [a-zA-Z]")
                }
                opLabels[opLabels.count - 1].append(l)
            }
            i += 1
        }
        if opLabels.count < shapes.count { throw fail("more operands were provided than specified in the equation") }

        // Check ranks, count labels, find the ellipsis rank.
        var labelCount = [Int](repeating: 0, count: 52)
        var ellipsisRank = 0
        for (k, labels) in opLabels.enumerated() {
            let ndim = shapes[k].count
            let hasEllipsis = labels.contains(ellipsisMarker)
            let n = labels.count - (hasEllipsis ? 1 : 0)
            if hasEllipsis {
                if n > ndim { throw fail("the number of subscripts in the equation (\(n)) is more than the number of dimensions (\(ndim)) for operand \(k)") }
                ellipsisRank = Swift.max(ellipsisRank, ndim - n)
            } else if n != ndim {
                throw fail("the number of subscripts in the equation (\(n)) does not match the number of dimensions (\(ndim)) for operand \(k) and no ellipsis was given")
            }
            for l in labels where l != ellipsisMarker { labelCount[l] += 1 }
        }
        let anyEllipsis = opLabels.contains { $0.contains(ellipsisMarker) }

        // Output subscripts.
        var output: [Int] = []
        if let arrow {
            let rhs = Array(chars[(arrow + 2)...])
            var seen = Set<Int>()
            var outEllipsis = false
            var j = 0
            while j < rhs.count {
                let c = rhs[j]
                switch c {
                case " ": break
                case ".":
                    if outEllipsis { throw fail("found '.' for output but an ellipsis (...) was already found") }
                    guard j + 2 < rhs.count, rhs[j + 1] == ".", rhs[j + 2] == "." else {
                        throw fail("found '.' for output that is not part of any ellipsis (...)")
                    }
                    j += 2
                    outEllipsis = true
                    output.append(contentsOf: (0..<ellipsisRank).map { ellipsisBase + $0 })
                default:
                    guard let l = labelIndex(c) else {
                        throw fail("invalid subscript given at index \(lhs.count + 2 + j) in the equation string, subscripts must be in [a-zA-Z]")
                    }
                    if seen.contains(l) { throw fail("output subscript \(c) appears more than once in the output") }
                    if labelCount[l] == 0 { throw fail("output subscript \(c) does not appear in the equation for any input operand") }
                    seen.insert(l)
                    output.append(l)
                }
                j += 1
            }
            _ = anyEllipsis
        } else {
            output = (0..<ellipsisRank).map { ellipsisBase + $0 } + (0..<52).filter { labelCount[$0] == 1 }
        }

        // Expand the ellipsis of each operand into right-aligned labels; check sizes.
        var plan = EinsumPlan(operandLabels: [], outputLabels: output, sizes: [:])
        for (k, labels) in opLabels.enumerated() {
            let shape = shapes[k]
            var full: [Int] = []
            for l in labels {
                if l == ellipsisMarker {
                    let e = shape.count - (labels.count - 1)
                    full.append(contentsOf: ((ellipsisRank - e)..<ellipsisRank).map { ellipsisBase + $0 })
                } else {
                    full.append(l)
                }
            }
            // Repeated subscripts within the operand must have equal sizes.
            var own: [Int: Int] = [:]
            for (d, l) in full.enumerated() {
                if let s = own[l], s != shape[d], l < ellipsisBase {
                    throw fail("subscript \(labelName(l)) is repeated for operand \(k) but the sizes don't match, \(shape[d]) != \(s)")
                }
                own[l] = shape[d]
            }
            for (d, l) in full.enumerated() {
                let s = shape[d]
                if let prev = plan.sizes[l], prev != s, prev != 1, s != 1 {
                    if l < ellipsisBase {
                        throw fail("subscript \(labelName(l)) has size \(s) for operand \(k) which does not broadcast with previously seen size \(prev)")
                    }
                    throw fail("operands do not broadcast: ellipsis dimension of size \(s) for operand \(k) does not broadcast with previously seen size \(prev)")
                }
                if plan.sizes[l] == nil || plan.sizes[l] == 1 { plan.sizes[l] = s }
            }
            plan.operandLabels.append(full)
        }
        return plan
    }

    /// Runs the plan on the operands (left-to-right pairwise contraction).
    func execute(_ operands: [Tensor]) -> Tensor {
        // 1. Diagonals of repeated subscripts.
        var ops: [(Tensor, [Int])] = []
        for (t0, labels0) in zip(operands, operandLabels) {
            var t = t0, labels = labels0
            while let (a, b) = EinsumPlan.firstRepeat(labels) {
                let l = labels[a]
                t = linalgDiagonal(t, a, b)
                labels.remove(at: b); labels.remove(at: a); labels.append(l)
            }
            ops.append((t, labels))
        }
        // 2. Sum subscripts that appear only in this operand and not in the output.
        let outSet = Set(outputLabels)
        for k in 0..<ops.count {
            let elsewhere = Set(ops.indices.filter { $0 != k }.flatMap { ops[$0].1 }).union(outSet)
            ops[k] = EinsumPlan.sumOut(ops[k], keep: elsewhere)
        }
        // 3. Contract left to right.
        var cur = ops[0]
        for k in 1..<Swift.max(ops.count, 1) {
            let keep = outSet.union(ops[(k + 1)...].flatMap { $0.1 })
            cur = contract(cur, ops[k], keep: keep)
        }
        // 4. Remaining sums, then the output order.
        cur = EinsumPlan.sumOut(cur, keep: outSet)
        let perm = outputLabels.map { cur.1.firstIndex(of: $0)! }
        let result = cur.0.permute(perm)
        let target = outputLabels.map { sizes[$0]! }
        return result.shape == target ? result : result.expand(target)
    }

    private static func firstRepeat(_ labels: [Int]) -> (Int, Int)? {
        for a in 0..<labels.count { for b in (a + 1)..<Swift.max(labels.count, a + 1) where labels[a] == labels[b] { return (a, b) } }
        return nil
    }

    /// Sums the dims whose labels are not in `keep`.
    private static func sumOut(_ op: (Tensor, [Int]), keep: Set<Int>) -> (Tensor, [Int]) {
        let dims = op.1.indices.filter { !keep.contains(op.1[$0]) }
        if dims.isEmpty { return op }
        return (op.0.sum(dim: dims), op.1.enumerated().filter { !dims.contains($0.offset) }.map { $0.element })
    }

    /// Contracts two operands, keeping the labels in `keep`.
    private func contract(_ a0: (Tensor, [Int]), _ b0: (Tensor, [Int]), keep: Set<Int>) -> (Tensor, [Int]) {
        let a = EinsumPlan.sumOut(a0, keep: keep.union(b0.1)), b = EinsumPlan.sumOut(b0, keep: keep.union(a0.1))
        let la = a.1, lb = b.1
        let batch = la.filter { lb.contains($0) && keep.contains($0) }
        let summed = la.filter { lb.contains($0) && !keep.contains($0) }
        let aOnly = la.filter { !lb.contains($0) }, bOnly = lb.filter { !la.contains($0) }
        let size = { (ls: [Int]) in ls.map { self.sizes[$0]! } }
        let pos = { (ls: [Int], of: [Int]) in ls.map { of.firstIndex(of: $0)! } }
        let bs = size(batch), ks = size(summed), ms = size(aOnly), ns = size(bOnly)
        if summed.isEmpty {
            // Broadcast product: A (batch, aOnly, 1…) * B (batch, 1…, bOnly).
            var at = a.0.permute(pos(batch + aOnly, la)), bt = b.0.permute(pos(batch + bOnly, lb))
            for _ in bOnly { at = at.unsqueeze(-1) }
            for _ in aOnly { bt = bt.unsqueeze(batch.count) }
            return (at * bt, batch + aOnly + bOnly)
        }
        let nb = shapeNumel(bs), nm = shapeNumel(ms), nk = shapeNumel(ks), nn = shapeNumel(ns)
        let at = a.0.permute(pos(batch + aOnly + summed, la)).expand(bs + ms + ks).reshape(nb, nm, nk)
        let bt = b.0.permute(pos(batch + summed + bOnly, lb)).expand(bs + ks + ns).reshape(nb, nk, nn)
        return (at.bmm(bt).reshape(bs + ms + ns), batch + aOnly + bOnly)
    }
}

extension torch {
    /// Einstein summation, like `torch.einsum`.
    ///
    /// Subscripts are letters (a-z, A-Z); `...` stands for broadcast dims; `->` gives the output
    /// explicitly, otherwise it is the ellipsis dims followed by the subscripts that appear exactly
    /// once, in alphabetical order (upper case first). A subscript repeated in one operand takes the
    /// diagonal; subscripts missing from the output are summed.
    ///
    /// ```swift
    /// let c = torch.einsum("ij,jk->ik", a, b)        // matrix product
    /// let t = torch.einsum("ii", m)                  // trace
    /// let y = torch.einsum("bn,anm,bm->ba", l, w, r) // bilinear
    /// ```
    public static func einsum(_ equation: String, _ operands: Tensor...) -> Tensor { einsum(equation, operands) }

    /// `einsum` with the operands as an array.
    public static func einsum(_ equation: String, _ operands: [Tensor]) -> Tensor {
        if _slowPath(Autocast.isActive), let r = Autocast.run(.einsum, operands, { einsum(equation, $0.map { $0! }) }) { return r }
        let plan: EinsumPlan
        do { plan = try EinsumPlan.make(equation, shapes: operands.map(\.shape)) } catch {
            preconditionFailure("\(error)")
        }
        return plan.execute(operands)
    }
}
