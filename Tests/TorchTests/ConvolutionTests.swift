import XCTest
@testable import Torch

/// Conv1d/2d/3d and ConvTranspose1d/2d/3d against PyTorch (Tests/Fixtures/conv_layers.json, written by
/// scripts/fixtures/conv_layers.py): forward, input/weight/bias gradients, reprs, seeded init; channels-last
/// inputs; numerical gradient checks of first and second derivatives; error messages.
final class ConvolutionTests: XCTestCase {
    private func cases(_ kind: String) throws -> [[String: Any]] {
        try loadFixtureCases("conv_layers").filter { $0["kind"] as? String == kind }
    }

    private func ints(_ v: Any?, default d: Int) -> [Int] {
        if let i = v as? Int { return [i] }
        if let a = v as? [Int] { return a }
        return [d]
    }

    /// The module a fixture case describes, with PyTorch's weight and bias copied in.
    private func module(_ c: [String: Any]) -> nn.ConvNd {
        let name = c["module"] as! String
        let cin = c["in"] as! Int, cout = c["out"] as! Int, k = c["kernel"] as! [Int]
        let stride = ints(c["stride"], default: 1), dilation = ints(c["dilation"], default: 1)
        let groups = c["groups"] as? Int ?? 1, bias = c["bias"] is [String: Any]
        let dtype: DType = c["dtype"] as! String == "float64" ? .float64 : .float32
        let padding: any ConvPaddingSpec = (c["padding"] as? String) ?? ints(c["padding"], default: 0)
        let mode = nn.PaddingMode(rawValue: c["padding_mode"] as? String ?? "zeros")!
        let outputPadding = ints(c["output_padding"], default: 0)
        let m: nn.ConvNd
        switch name {
        case "Conv1d": m = nn.Conv1d(cin, cout, k, stride: stride, padding: padding, dilation: dilation, groups: groups, bias: bias, paddingMode: mode, dtype: dtype)
        case "Conv2d": m = nn.Conv2d(cin, cout, k, stride: stride, padding: padding, dilation: dilation, groups: groups, bias: bias, paddingMode: mode, dtype: dtype)
        case "Conv3d": m = nn.Conv3d(cin, cout, k, stride: stride, padding: padding, dilation: dilation, groups: groups, bias: bias, paddingMode: mode, dtype: dtype)
        case "ConvTranspose1d": m = nn.ConvTranspose1d(cin, cout, k, stride: stride, padding: ints(c["padding"], default: 0), outputPadding: outputPadding, groups: groups, bias: bias, dilation: dilation, dtype: dtype)
        case "ConvTranspose2d": m = nn.ConvTranspose2d(cin, cout, k, stride: stride, padding: ints(c["padding"], default: 0), outputPadding: outputPadding, groups: groups, bias: bias, dilation: dilation, dtype: dtype)
        case "ConvTranspose3d": m = nn.ConvTranspose3d(cin, cout, k, stride: stride, padding: ints(c["padding"], default: 0), outputPadding: outputPadding, groups: groups, bias: bias, dilation: dilation, dtype: dtype)
        default: fatalError("unknown module \(name)")
        }
        torch.noGrad {
            m.weight.copy_(fixtureTensor(c["weight"]!))
            if let b = c["bias"] as? [String: Any] { m.bias!.copy_(fixtureTensor(b)) }
        }
        return m
    }

    private func tolerance(_ c: [String: Any]) -> Double { c["dtype"] as! String == "float64" ? 1e-10 : 2e-5 }

    func testConvolutionsMatchPyTorch() throws {
        let all = try cases("conv")
        XCTAssertEqual(all.count, 20)
        for c in all {
            let label = "\(c["repr"]!) input \((c["input"] as! [String: Any])["shape"]!)"
            let t = tolerance(c)
            let m = module(c)
            XCTAssertEqual(m.description, c["repr"] as! String)
            let x = fixtureTensor(c["input"]!).requiresGrad_()
            let y = m(x)
            assertClose(y, fixtureTensor(c["output"]!), atol: t, rtol: t, "\(label) output")
            XCTAssertEqual(y.gradFn?.name, c["grad_fn"] as? String, label)
            y.backward(fixtureTensor(c["grad_output"]!))
            assertClose(x.grad!, fixtureTensor(c["grad_input"]!), atol: t * 2, rtol: t, "\(label) grad_input")
            assertClose(m.weight.grad!, fixtureTensor(c["grad_weight"]!), atol: t * 4, rtol: t, "\(label) grad_weight")
            if let gb = c["grad_bias"] { assertClose(m.bias!.grad!, fixtureTensor(gb), atol: t * 4, rtol: t, "\(label) grad_bias") }
        }
    }

    func testChannelsLastAndStridedInputs() throws {
        for c in try cases("conv") where (c["input"] as! [String: Any])["shape"].map({ ($0 as! [Int]).count }) == 4 {
            let m = module(c)
            let ref = fixtureTensor(c["input"]!)
            // Channels-last storage (NHWC memory viewed as NCHW) and a sliced view.
            let channelsLast = ref.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2).requiresGrad_()
            if ref.shape[1] > 1 { XCTAssertFalse(channelsLast.isContiguous) }
            let y = m(channelsLast)
            assertClose(y, fixtureTensor(c["output"]!), atol: 2e-5, rtol: 2e-5, "channels-last \(c["repr"]!)")
            y.backward(fixtureTensor(c["grad_output"]!))
            assertClose(channelsLast.grad!, fixtureTensor(c["grad_input"]!), atol: 4e-5, rtol: 2e-5, "channels-last grad \(c["repr"]!)")
            let sliced = fixtureTensor(c["input"]!, layout: "sliced")
            assertClose(m(sliced), fixtureTensor(c["output"]!), atol: 2e-5, rtol: 2e-5, "sliced \(c["repr"]!)")
        }
    }

    func testSeededInitialisationMatchesPyTorch() throws {
        for c in try cases("conv_init") {
            let args = c["args"] as! [Int]
            torch.manualSeed(0)
            let m: nn.ConvNd
            switch c["module"] as! String {
            case "Conv2d": m = nn.Conv2d(args[0], args[1], args[2])
            case "Conv1d": m = nn.Conv1d(args[0], args[1], args[2])
            default: m = nn.ConvTranspose2d(args[0], args[1], args[2])
            }
            assertClose(m.weight, fixtureTensor(c["weight"]!), atol: 1e-7, rtol: 1e-6, "\(c["module"]!) weight")
            assertClose(m.bias!, fixtureTensor(c["bias"]!), atol: 1e-7, rtol: 1e-6, "\(c["module"]!) bias")
            XCTAssertEqual(m.stateDict().keys, c["state_dict_keys"] as! [String])
        }
    }

    func testBothSpellingsCompile() {
        XCTAssertEqual(nn.Conv2d(1, 6, 3).description, "Conv2d(1, 6, kernel_size=(3, 3), stride=(1, 1))")
        XCTAssertEqual(nn.Conv2d(3, 64, kernelSize: 3, stride: 1, padding: 1).description,
                       "Conv2d(3, 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))")
        XCTAssertEqual(nn.Conv2d(inChannels: 3, outChannels: 8, kernelSize: [3, 5], padding: "same", bias: false).description,
                       "Conv2d(3, 8, kernel_size=(3, 5), stride=(1, 1), padding=same, bias=False)")
        let k = 5, s = 2
        XCTAssertEqual(nn.Conv1d(4, 4, k, stride: s, groups: 4).description,
                       "Conv1d(4, 4, kernel_size=(5,), stride=(2,), groups=4)")
        XCTAssertEqual(nn.ConvTranspose2d(16, 8, 4, stride: 2, padding: 1).description,
                       "ConvTranspose2d(16, 8, kernel_size=(4, 4), stride=(2, 2), padding=(1, 1))")
    }

    func testGradcheckFirstAndSecondOrder() {
        torch.manualSeed(3)
        let x = torch.randn(2, 4, 5, 4, dtype: .float64), w = torch.randn(6, 2, 3, 2, dtype: .float64)
        let b = torch.randn(6, dtype: .float64)
        gradcheck([x, w, b]) { F.conv2d($0[0], $0[1], $0[2], stride: [2, 1], padding: [1, 2], dilation: [1, 2], groups: 2) }
        let wt = torch.randn(4, 3, 3, 2, dtype: .float64)
        gradcheck([x, wt, b.narrow(0, 0, 3)]) {
            F.convTranspose2d($0[0], $0[1], $0[2], stride: 2, padding: 1, outputPadding: 1)
        }
        let x1 = torch.randn(2, 3, 7, dtype: .float64), w1 = torch.randn(2, 3, 3, dtype: .float64)
        gradcheck([x1, w1]) { F.conv1d($0[0], $0[1], stride: 2, padding: "valid") }
        // Second order: the gradient of a function of the first derivatives (ConvolutionBackwardBackward0).
        let xs = torch.randn(1, 2, 4, 4, dtype: .float64), ws = torch.randn(3, 2, 2, 2, dtype: .float64)
        gradcheck([xs, ws]) { v in
            torch.enableGrad {   // gradcheck evaluates f under noGrad for its finite differences
                let y = F.conv2d(v[0], v[1], stride: 1, padding: 1)
                let g = torch.autograd.grad([(y * y).sum()], [v[0], v[1]], createGraph: true)
                return g[0]!.sum() + (g[1]! * g[1]!).sum()
            }
        }
    }

    /// Taps that read only padding (a 3×3 kernel with padding 1 on a 1×1 plane, stride 2 from 2×2 to 1×1, a
    /// dilated tap past the input) are cropped from the GEMMs: every result must equal the same convolution on an
    /// explicitly padded input, where every tap reads data.
    func testDeadTapsGiveTheSameResultsAsExplicitPadding() {
        torch.manualSeed(11)
        // (input spatial size, kernel, stride, padding, dilation, groups, channels in/out)
        let cases: [([Int], [Int], [Int], [Int], [Int], Int, Int, Int)] = [
            ([1, 1], [3, 3], [1, 1], [1, 1], [1, 1], 1, 8, 6),
            ([2, 2], [3, 3], [2, 2], [1, 1], [1, 1], 1, 4, 5),
            ([2, 3], [3, 3], [1, 1], [2, 2], [2, 2], 2, 4, 6),
            ([1, 5], [3, 5], [1, 3], [1, 2], [1, 1], 1, 3, 4),
        ]
        for dtype in [DType.float64, .float32] {
            for (size, k, s, p, d, groups, cin, cout) in cases {
                let x = torch.randn([3, cin] + size, dtype: dtype, requiresGrad: true)
                let w = torch.randn([cout, cin / groups] + k, dtype: dtype, requiresGrad: true)
                let b = torch.randn(cout, dtype: dtype, requiresGrad: true)
                let y = F.conv2d(x, w, b, stride: s, padding: p, dilation: d, groups: groups)
                let xp = F.pad(x, [p[1], p[1], p[0], p[0]])
                let ref = F.conv2d(xp, w, b, stride: s, dilation: d, groups: groups)
                XCTAssertEqual(y.shape, ref.shape, "\(size) \(k)")
                let tol = dtype == .float64 ? 1e-10 : 1e-4
                assertClose(y, ref, atol: tol, "forward \(size) \(k) \(dtype)")
                let gy = torch.randn(y.shape, dtype: dtype)
                let g = torch.autograd.grad([(y * gy).sum()], [x, w, b])
                let gRef = torch.autograd.grad([(ref * gy).sum()], [x, w, b])
                for (i, name) in ["input", "weight", "bias"].enumerated() {
                    assertClose(g[i]!, gRef[i]!, atol: tol, "\(name) gradient \(size) \(k) \(dtype)")
                }
            }
        }
        // The transposed convolution runs the same kernels the other way round.
        let xt = torch.randn(2, 4, 1, 1, dtype: .float64), wt = torch.randn(4, 3, 3, 3, dtype: .float64)
        gradcheck([xt, wt]) { F.convTranspose2d($0[0], $0[1], padding: 1) }
        gradcheck([torch.randn(2, 4, 1, 1, dtype: .float64), torch.randn(3, 4, 3, 3, dtype: .float64)]) {
            F.conv2d($0[0], $0[1], padding: 1)
        }
    }

    func testErrorMessagesNameTheShapes() {
        // Preconditions stop the process, so the checks' message builders are tested (texts as PyTorch 2.15 prints them).
        XCTAssertEqual(convChannelMismatchMessage(input: [1, 1, 32, 32], weight: [6, 3, 5, 5], groups: 1, transposed: false),
                       "Given groups=1, weight of size [6, 3, 5, 5], expected input[1, 1, 32, 32] to have 3 channels, but got 1 channels instead")
        XCTAssertEqual(convChannelMismatchMessage(input: [1, 4, 8, 8], weight: [6, 2, 3, 3], groups: 2, transposed: false), nil)
        XCTAssertEqual(convChannelMismatchMessage(input: [2, 3, 4, 4], weight: [4, 2, 3, 3], groups: 1, transposed: true),
                       "Given transposed=1, weight of size [4, 2, 3, 3], expected input[2, 3, 4, 4] to have 4 channels, but got 3 channels instead")
        XCTAssertEqual(ConvGeometry.outputSize(input: 32, kernel: 5, stride: 1, padding: 0, dilation: 1), 28)
        XCTAssertEqual(ConvGeometry.outputSize(input: 7, kernel: 3, stride: 2, padding: 1, dilation: 2), 3)
        XCTAssertEqual(F.samePadding(kernel: [4, 3], dilation: [1, 2]).symmetric, [1, 2])
        XCTAssertEqual(F.samePadding(kernel: [4, 3], dilation: [1, 2]).extra, [1, 0])
    }
}
