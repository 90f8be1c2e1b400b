import Foundation
import XCTest
@testable import Torch

/// Type promotion and dtype conversion against PyTorch (Tests/Fixtures/core_misc.json, kinds
/// "promotion" and "convert"): every pair of dtypes as dimensioned and 0-d tensors, Swift Int and
/// Double operands, integer wrap-around, true division of integers, and float16/bfloat16 rounding.
final class TypePromotionTests: XCTestCase {
    static let cases: [[String: Any]] = (try? loadFixtureCases("core_misc")) ?? []

    private func cases(_ kind: String) -> [[String: Any]] {
        let r = Self.cases.filter { ($0["kind"] as! String) == kind }
        XCTAssertFalse(r.isEmpty, "no \(kind) cases in core_misc.json")
        return r
    }

    static func dtype(_ name: String) -> DType { DType.allCases.first { $0.name == name }! }

    /// The operand the fixture used: [3, -2] (bool: [true, false]; uint8: [250, 7]) or its first value as a 0-d tensor.
    static func operand(_ spec: [String: Any]) -> Tensor {
        let dt = dtype(spec["dtype"] as! String)
        let values: [Int64] = dt == .bool ? [1, 0] : (dt == .uint8 ? [250, 7] : [3, -2])
        let shape = (spec["form"] as! String) == "dim" ? [2] : []
        let v = shape.isEmpty ? [values[0]] : values
        return dt == .bool ? Tensor(v.map { $0 != 0 }, shape: shape) : Tensor(v, shape: shape).to(dt)
    }

    func testPromotionMatchesPyTorch() {
        for c in cases("promotion") {
            let op = c["op"] as! String
            let aSpec = c["a"] as! [String: Any], bSpec = c["b"] as! [String: Any]
            let a = Self.operand(aSpec)
            let out: Tensor
            let label = "\(op) \(aSpec) \(bSpec)"
            switch bSpec["form"] as! String {
            case "int":
                let s = (bSpec["value"] as! NSNumber).intValue
                switch op {
                case "add": out = a + s
                case "mul": out = a * s
                default: out = a / s
                }
            case "float":
                let s = (bSpec["value"] as! NSNumber).doubleValue
                switch op {
                case "add": out = a + s
                case "mul": out = a * s
                default: out = a / s
                }
            default:
                let b = Self.operand(bSpec)
                switch op {
                case "add": out = a + b
                case "mul": out = a * b
                default: out = a / b
                }
            }
            assertMatches(out, c["out"]!, tol: Tolerance(atol: 0, rtol: 0), label)
        }
    }

    /// `DType.promote` is PyTorch's `torch.promote_types` (checked through dimensioned operands above);
    /// a few pairs spelled out.
    func testPromoteTypesTable() {
        XCTAssertEqual(DType.promote(.int64, .float32), .float32)
        XCTAssertEqual(DType.promote(.float32, .float64), .float64)
        XCTAssertEqual(DType.promote(.uint8, .int32), .int32)
        XCTAssertEqual(DType.promote(.bool, .uint8), .uint8)
        XCTAssertEqual(DType.promote(.float16, .bfloat16), .float32)
        XCTAssertEqual(DType.promote(.int64, .float16), .float16)
        // 0-d tensors and Swift numbers only win across categories.
        let i = torch.tensor([1, 2]), f = torch.tensor([1.0, 2.0])
        XCTAssertEqual((i + torch.tensor(2.5, dtype: .float64)).dtype, .float64)   // a 0-d tensor of a higher category keeps its dtype
        XCTAssertEqual((f + torch.tensor(2.5, dtype: .float64)).dtype, .float32)
        XCTAssertEqual((torch.tensor(2.5, dtype: .float64) + torch.tensor(1.5)).dtype, .float64)
        XCTAssertEqual((i.to(.int32) + torch.tensor(7)).dtype, .int32)
        XCTAssertEqual((i.to(.uint8) + 300).dtype, .uint8)
        XCTAssertEqual((torch.tensor([true]) + 1).dtype, .int64)
        XCTAssertEqual((torch.tensor([true]) + 1.5).dtype, .float32)
        XCTAssertEqual((f.to(.float16) * 2.5).dtype, .float16)
        XCTAssertEqual(torch.where(torch.tensor([true]), i.to(.int32), torch.tensor(1.5)).dtype, .float32)
        XCTAssertEqual((i .< 1.5).toArray(as: Bool.self), [true, false])
    }

    func testConversionsMatchPyTorch() {
        for c in cases("convert") {
            let to = Self.dtype(c["to"] as! String)
            for layout in fixtureLayouts(c["a"]!) {
                let a = fixtureTensor(c["a"]!, layout: layout)
                let out: Tensor
                if let half = c["roundTrip"] as? String {
                    out = a.to(Self.dtype(half)).to(to)
                } else {
                    out = a.to(to)
                }
                assertMatches(out, c["out"]!, tol: Tolerance(atol: 0, rtol: 0), "convert \(a.dtype) → \(to) layout=\(layout)")
            }
        }
    }

    func testConversionHelpersAndGradients() {
        let x = torch.tensor([1.5, -2.25], requiresGrad: true)
        let y = x.double()
        XCTAssertEqual(y.dtype, .float64)
        XCTAssertEqual(y.gradFn?.name, "ToCopyBackward0")
        (y * y).sum().backward()
        XCTAssertEqual(x.grad?.dtype, .float32)
        assertClose(x.grad!, [3, -4.5])
        XCTAssertTrue(x.float() === x, "to(same dtype) returns self")
        XCTAssertEqual(x.half().dtype, .float16)
        XCTAssertEqual(x.bfloat16().dtype, .bfloat16)
        XCTAssertEqual(x.long().toArray(as: Int.self), [1, -2])
        XCTAssertEqual(x.int().dtype, .int32)
        XCTAssertEqual(x.bool().toArray(as: Bool.self), [true, true])
        XCTAssertEqual(torch.tensor([300]).byte().toArray(as: Int.self), [44])
        XCTAssertEqual(torch.tensor([2.5]).half().float().item(), 2.5)
        XCTAssertEqual(torch.tensor([Double(Float16.greatestFiniteMagnitude) * 2]).half().item(), .infinity)
        // Integer → float conversion is not recorded; gradients flow through float → float only.
        XCTAssertNil(x.long().gradFn)
        XCTAssertEqual(torch.tensor([3]).item(as: Int.self), 3)
        XCTAssertEqual(torch.tensor([Int64.max]).item(as: Int64.self), Int64.max)
        XCTAssertEqual(torch.tensor([0.1]).to(.float16).toArray(as: Float.self), [Float(Float16(0.1))])
    }

    /// Arithmetic on float16/bfloat16 computes in float32 and rounds the result, like PyTorch's CPU.
    func testHalfArithmetic() {
        let a = torch.tensor([0.1, 1000.5, 3.0]).half(), b = torch.tensor([0.2, 0.25, 1e-4]).half()
        let r = (a + b).float().toArray(as: Float.self)
        let expected = zip(a.float().toArray(as: Float.self), b.float().toArray(as: Float.self)).map { Float(Float16($0 + $1)) }
        XCTAssertEqual(r, expected)
        let bf = torch.tensor([1.0, 256.0]).bfloat16() + 1.0
        XCTAssertEqual(bf.dtype, .bfloat16)
        XCTAssertEqual(bf.float().toArray(as: Float.self), [2, 256])  // 257 rounds to even in bfloat16
        XCTAssertEqual(torch.tensor([1.5]).half().exp().dtype, .float16)
        XCTAssertEqual(torch.tensor([1, 2]).half().sum().dtype, .float16)
    }
}
