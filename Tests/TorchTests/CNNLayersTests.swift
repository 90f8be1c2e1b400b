import XCTest
@testable import Torch

/// InstanceNorm, LocalResponseNorm, pixel/channel shuffle, padding modules, F.interpolate / nn.Upsample,
/// F.fold / F.unfold, F.affineGrid / F.gridSample against PyTorch 2.15 (Tests/Fixtures/cnn_layers.json, written
/// by scripts/fixtures/cnn_layers.py): forward values, gradients, reprs and state-dict keys; numerical gradient
/// checks of first and second derivatives; the argument checks' messages; PyTorch's spellings of common layers.
final class CNNLayersTests: XCTestCase {
    private func cases(_ kind: String) throws -> [[String: Any]] {
        try loadFixtureCases("cnn_layers").filter { $0["kind"] as? String == kind }
    }

    private func double(_ v: Any?) -> Double? { (v as? NSNumber)?.doubleValue }
    private func ints(_ v: Any?) -> [Int]? {
        if let a = v as? [NSNumber] { return a.map(\.intValue) }
        return (v as? NSNumber).map { [$0.intValue] }
    }
    private func doubles(_ v: Any?) -> [Double]? {
        if let a = v as? [NSNumber] { return a.map(\.doubleValue) }
        return (v as? NSNumber).map { [$0.doubleValue] }
    }
    private func bool(_ v: Any?) -> Bool? { (v as? NSNumber)?.boolValue }

    /// The Swift call a fixture "op" case describes.
    private func call(_ c: [String: Any], _ x: [Tensor]) -> Tensor {
        let a = c["args"] as! [String: Any]
        switch c["op"] as! String {
        case "instance_norm":
            return F.instanceNorm(x[0], weight: x.count > 1 ? x[1] : nil, bias: x.count > 2 ? x[2] : nil, eps: double(a["eps"])!)
        case "lrn":
            return F.localResponseNorm(x[0], size: ints(a["size"])![0], alpha: double(a["alpha"]) ?? 1e-4,
                                       beta: double(a["beta"]) ?? 0.75, k: double(a["k"]) ?? 1)
        case "pixel_shuffle": return F.pixelShuffle(x[0], ints(a["r"])![0])
        case "pixel_unshuffle": return F.pixelUnshuffle(x[0], ints(a["r"])![0])
        case "channel_shuffle": return F.channelShuffle(x[0], ints(a["groups"])![0])
        case "interpolate":
            return F.interpolate(x[0], size: ints(a["size"]), scaleFactor: doubles(a["scale_factor"]),
                                 mode: F.InterpolationMode(rawValue: a["mode"] as! String)!,
                                 alignCorners: bool(a["align_corners"]), recomputeScaleFactor: bool(a["recompute_scale_factor"]),
                                 antialias: bool(a["antialias"]) ?? false)
        case "unfold":
            return F.unfold(x[0], kernelSize: ints(a["kernel_size"])!, dilation: ints(a["dilation"])!,
                            padding: ints(a["padding"])!, stride: ints(a["stride"])!)
        case "fold":
            return F.fold(x[0], outputSize: ints(a["output_size"])!, kernelSize: ints(a["kernel_size"])!,
                          dilation: ints(a["dilation"])!, padding: ints(a["padding"])!, stride: ints(a["stride"])!)
        case "affine_grid":
            return F.affineGrid(x[0], size: ints(a["size"])!, alignCorners: bool(a["align_corners"])!)
        case "grid_sample":
            return F.gridSample(x[0], x[1], mode: F.GridSampleMode(rawValue: a["mode"] as! String)!,
                                paddingMode: F.GridSamplePadding(rawValue: a["padding_mode"] as! String)!,
                                alignCorners: bool(a["align_corners"])!)
        default:
            XCTFail("unknown op \(c["op"]!)")
            return x[0]
        }
    }

    func testOpsMatchPyTorch() throws {
        let all = try cases("op")
        XCTAssertEqual(all.count, 118)
        var seen = Set<String>()
        for c in all {
            let label = "\(c["op"]!) \(c["args"]!)"
            seen.insert(c["op"] as! String)
            let needs = (c["needs_grad"] as! [NSNumber]).map(\.boolValue)
            let inputs = zip(c["inputs"] as! [Any], needs).map { t, g in g ? fixtureTensor(t).requiresGrad_() : fixtureTensor(t) }
            let y = call(c, inputs)
            assertClose(y, fixtureTensor(c["output"]!), atol: 3e-5, rtol: 3e-5, "\(label) output")
            guard let go = c["grad_output"] else { continue }
            y.backward(fixtureTensor(go))
            for (i, g) in (c["grads"] as! [Any]).enumerated() where needs[i] {
                if let g = g as? [String: Any] {
                    assertClose(inputs[i].grad ?? torch.zerosLike(inputs[i]), fixtureTensor(g), atol: 1e-4, rtol: 1e-4, "\(label) grad \(i)")
                }
            }
        }
        XCTAssertEqual(seen.count, 10)
    }

    func testStridedInputsMatchContiguous() throws {
        // Channels-last storage and sliced views give the same values as the contiguous fixture inputs.
        for c in try cases("op") where ["interpolate", "grid_sample", "unfold"].contains(c["op"] as! String) {
            let first = (c["inputs"] as! [Any])[0]
            guard fixtureShape(first).count == 4 else { continue }
            let ref = fixtureTensor(first)
            let rest = (c["inputs"] as! [Any]).dropFirst().map { fixtureTensor($0) }
            let channelsLast = ref.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
            assertClose(call(c, [channelsLast] + rest), fixtureTensor(c["output"]!), atol: 3e-5, rtol: 3e-5, "channels-last \(c["args"]!)")
            assertClose(call(c, [fixtureTensor(first, layout: "sliced")] + rest), fixtureTensor(c["output"]!),
                        atol: 3e-5, rtol: 3e-5, "sliced \(c["args"]!)")
        }
    }

    func testInstanceNormModuleTracksRunningStatistics() throws {
        let c = try XCTUnwrap(try cases("instance_module").first)
        let m = nn.InstanceNorm2d(3, momentum: 0.2, affine: true, trackRunningStats: true)
        XCTAssertEqual(m.description, c["repr"] as! String)
        XCTAssertEqual(m.stateDict().keys, c["keys"] as! [String])
        assertClose(m(fixtureTensor(c["x1"]!)), fixtureTensor(c["y1"]!), atol: 2e-5, rtol: 2e-5, "train step 1")
        _ = m(fixtureTensor(c["x2"]!))
        m.eval()
        assertClose(m(fixtureTensor(c["x3"]!)), fixtureTensor(c["y3"]!), atol: 2e-5, rtol: 2e-5, "eval")
        assertClose(m.runningMean!, fixtureTensor(c["running_mean"]!), atol: 1e-6, rtol: 1e-5, "running_mean")
        assertClose(m.runningVar!, fixtureTensor(c["running_var"]!), atol: 1e-6, rtol: 1e-5, "running_var")
        XCTAssertEqual(m.numBatchesTracked!.item(as: Int.self), 0)   // PyTorch's instance norm does not count
        // Unbatched input: (C, H, W).
        let x = torch.randn(3, 4, 5)
        assertClose(nn.InstanceNorm2d(3)(x), F.instanceNorm(x.unsqueeze(0)).squeeze(0), atol: 1e-6, rtol: 1e-6)
    }

    /// The Swift spelling of each module in the fixture's repr list.
    private func module(_ name: String) -> nn.Module? {
        switch name {
        case "ZeroPad2d": return nn.ZeroPad2d([1, 1, 2, 0])
        case "ZeroPad1d": return nn.ZeroPad1d(2)
        case "ZeroPad3d": return nn.ZeroPad3d(1)
        case "ConstantPad1d": return nn.ConstantPad1d(2, 3.5)
        case "ConstantPad2d": return nn.ConstantPad2d([1, 0, 2, 1], -1.0)
        case "ConstantPad3d": return nn.ConstantPad3d(1, 0.5)
        case "ReflectionPad1d": return nn.ReflectionPad1d([2, 1])
        case "ReflectionPad2d": return nn.ReflectionPad2d(1)
        case "ReflectionPad3d": return nn.ReflectionPad3d(1)
        case "ReplicationPad1d": return nn.ReplicationPad1d(3)
        case "ReplicationPad2d": return nn.ReplicationPad2d([1, 2, 0, 1])
        case "ReplicationPad3d": return nn.ReplicationPad3d(2)
        case "CircularPad1d": return nn.CircularPad1d(1)
        case "CircularPad2d": return nn.CircularPad2d([1, 1, 2, 0])
        case "CircularPad3d": return nn.CircularPad3d(1)
        case "InstanceNorm1d": return nn.InstanceNorm1d(16)
        case "InstanceNorm2d": return nn.InstanceNorm2d(4, affine: true)
        case "InstanceNorm3d": return nn.InstanceNorm3d(3, eps: 1e-3, momentum: nil, trackRunningStats: true)
        case "LocalResponseNorm": return nn.LocalResponseNorm(2)
        case "LocalResponseNorm5": return nn.LocalResponseNorm(5, alpha: 1e-3, beta: 0.5, k: 2)
        case "PixelShuffle": return nn.PixelShuffle(3)
        case "PixelUnshuffle": return nn.PixelUnshuffle(2)
        case "ChannelShuffle": return nn.ChannelShuffle(2)
        case "Upsample": return nn.Upsample(scaleFactor: 2)
        case "UpsampleBilinear": return nn.Upsample(size: [3, 4], mode: .bilinear, alignCorners: true)
        case "UpsampleScales": return nn.Upsample(scaleFactor: [2, 1.5], mode: .nearestExact)
        case "UpsamplingNearest2d": return nn.UpsamplingNearest2d(scaleFactor: 2)
        case "UpsamplingBilinear2d": return nn.UpsamplingBilinear2d(size: [3, 4])
        case "Fold": return nn.Fold([4, 5], 2)
        case "Unfold": return nn.Unfold([2, 3], padding: 1)
        case "PReLU": return nn.PReLU(10)
        default: return nil
        }
    }

    func testReprsStateDictKeysAndPaddingModules() throws {
        let all = try cases("repr")
        XCTAssertEqual(all.count, 31)
        for c in all {
            let name = c["name"] as! String
            guard let m = module(name) else { XCTFail("no Swift spelling for \(name)"); continue }
            XCTAssertEqual(m.description, c["repr"] as! String, name)
            XCTAssertEqual(m.stateDict().keys, c["keys"] as! [String], name)
            if let x = c["input"] {
                assertClose(m(fixtureTensor(x)), fixtureTensor(c["output"]!), atol: 1e-6, rtol: 1e-6, name)
            }
        }
    }

    func testGradcheckFirstOrder() {
        torch.manualSeed(7)
        let x4 = torch.randn(1, 2, 4, 5, dtype: .float64)
        let w = torch.randn(2, dtype: .float64), b = torch.randn(2, dtype: .float64)
        gradcheck([x4, w, b]) { F.instanceNorm($0[0], weight: $0[1], bias: $0[2]) }
        gradcheck([torch.randn(2, 5, 3, dtype: .float64)]) { F.localResponseNorm($0[0], size: 3, alpha: 0.3, beta: 0.7, k: 1.5) }
        gradcheck([torch.randn(1, 8, 2, 3, dtype: .float64)]) { F.pixelShuffle($0[0], 2) }
        for mode in [F.InterpolationMode.nearest, .bilinear, .bicubic, .area] {
            gradcheck([x4]) { F.interpolate($0[0], size: [7, 3], mode: mode) }
        }
        gradcheck([x4]) { F.interpolate($0[0], size: [3, 2], mode: .bicubic, antialias: true) }
        gradcheck([torch.randn(1, 1, 2, 3, 2, dtype: .float64)]) {
            F.interpolate($0[0], scaleFactor: 1.5, mode: .trilinear, alignCorners: true)
        }
        gradcheck([x4]) { F.unfold($0[0], kernelSize: [2, 3], dilation: 1, padding: 1, stride: [2, 1]) }
        gradcheck([torch.randn(2, 8, 6, dtype: .float64)]) { F.fold($0[0], outputSize: [3, 4], kernelSize: 2, stride: 1) }
        gradcheck([torch.randn(2, 2, 3, dtype: .float64)]) { F.affineGrid($0[0], size: [2, 1, 3, 4], alignCorners: false) }
        let grid = torch.rand(1, 3, 2, 2, dtype: .float64) * 2.6 - 1.3
        for (mode, pad) in [(F.GridSampleMode.bilinear, F.GridSamplePadding.zeros), (.bilinear, .reflection), (.bicubic, .border)] {
            gradcheck([x4, grid]) { F.gridSample($0[0], $0[1], mode: mode, paddingMode: pad, alignCorners: false) }
        }
        gradcheck([x4, grid]) { F.gridSample($0[0], $0[1].detach(), mode: .nearest, paddingMode: .border, alignCorners: true) }
    }

    func testGradcheckSecondOrder() {
        torch.manualSeed(8)
        let x = torch.randn(1, 2, 3, 4, dtype: .float64)
        let grid = torch.rand(1, 2, 3, 2, dtype: .float64) * 2.4 - 1.2
        func secondOrder(_ inputs: [Tensor], _ f: @escaping ([Tensor]) -> Tensor) {
            gradcheck(inputs) { v in
                torch.enableGrad {   // gradcheck evaluates f under noGrad for its finite differences
                    let y = f(v)
                    let g = torch.autograd.grad([(y * y).sum()], v, createGraph: true)
                    return g.compactMap { $0.map { ($0 * $0).sum() } }.reduce(torch.zeros([], dtype: .float64), +)
                }
            }
        }
        secondOrder([x]) { F.interpolate($0[0], size: [5, 3], mode: .bilinear, alignCorners: true) }
        secondOrder([x, grid]) { F.gridSample($0[0], $0[1], mode: .bilinear, paddingMode: .zeros, alignCorners: true) }
        secondOrder([x]) { F.unfold($0[0], kernelSize: 2, stride: 1) }
        secondOrder([x]) { F.localResponseNorm($0[0], size: 2) }
    }

    func testFoldIsUnfoldsAdjointAndIdentityGrid() {
        torch.manualSeed(9)
        let x = torch.randn(2, 3, 6, 6)
        let cols = F.unfold(x, kernelSize: 2, stride: 2)
        assertClose(F.fold(cols, outputSize: [6, 6], kernelSize: 2, stride: 2), x, atol: 0, rtol: 0)
        let theta = torch.tensor([[[1.0, 0, 0], [0, 1, 0]]]).float()
        for align in [false, true] {
            let grid = F.affineGrid(theta, size: [1, 3, 6, 6], alignCorners: align)
            assertClose(F.gridSample(x.narrow(0, 0, 1), grid, alignCorners: align), x.narrow(0, 0, 1), atol: 1e-5, rtol: 1e-5)
        }
        assertClose(F.pixelUnshuffle(F.pixelShuffle(x.reshape(2, 12, 3, 3), 2), 2), x.reshape(2, 12, 3, 3), atol: 0, rtol: 0)
    }

    func testArgumentChecksUsePyTorchsMessages() {
        func message(_ body: () throws -> Void) -> String? {
            do { try body(); return nil } catch { return (error as? LayerArgumentError)?.message }
        }
        func plan(_ shape: [Int], size: [Int]? = nil, scale: [Double]? = nil, mode: F.InterpolationMode = .nearest,
                  align: Bool? = nil, antialias: Bool = false) -> String? {
            message { _ = try F.interpolationPlan(inputShape: shape, size: size, scaleFactor: scale, mode: mode,
                                                  alignCorners: align, recomputeScaleFactor: false, antialias: antialias) }
        }
        XCTAssertEqual(plan([1, 2, 3], size: [3], mode: .bilinear), "Got 3D input, but bilinear mode needs 4D input")
        XCTAssertEqual(plan([1, 2, 3, 3], size: [3], align: true),
                       "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear")
        XCTAssertEqual(plan([1, 2, 3, 3]), "either size or scale_factor should be defined")
        XCTAssertEqual(plan([1, 2, 3, 3], size: [3], scale: [2]), "only one of size or scale_factor should be defined")
        XCTAssertEqual(plan([1, 2, 3, 3], size: [3, 3, 3]), "Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of [3, 3] and output size of (3, 3, 3). Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        XCTAssertNotNil(plan([2, 3], size: [3]))
        XCTAssertNotNil(plan([1, 2, 3], size: [3], mode: .linear, antialias: true))
        XCTAssertNil(plan([1, 2, 3, 3], scale: [2, 0.5], mode: .bicubic, align: false, antialias: true))
        XCTAssertEqual(try F.interpolationPlan(inputShape: [1, 1, 5, 7], size: nil, scaleFactor: [1.5], mode: .nearest,
                                               alignCorners: nil, recomputeScaleFactor: true, antialias: false).0, [7, 10])

        XCTAssertEqual(message { _ = try F.foldGeometry(inputShape: [1, 5, 12], outputSize: [4, 5], kernelSize: 2, dilation: 1, padding: 0, stride: 1) },
                       "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=5 and kernel_size=(2, 2)")
        XCTAssertEqual(message { _ = try F.foldGeometry(inputShape: [8, 10], outputSize: [4, 5], kernelSize: 2, dilation: 1, padding: 0, stride: 1) },
                       "Given output_size=(4, 5), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), stride=(1, 1), expected size of input's dimension 2 to match the calculated number of sliding blocks 3 * 4 = 12, but got input.size(2)=10.")
        XCTAssertEqual(message { _ = try F.unfoldGeometry(inputShape: [1, 1, 2, 2], kernelSize: 3, dilation: 1, padding: 0, stride: 1) },
                       "Given input with spatial size (2, 2), kernel_size=(3, 3), dilation=(1, 1), padding=(0, 0), calculated shape of the array of sliding blocks as (0, 0), but its components must be at least one.")
        XCTAssertEqual(message { _ = try F.unfoldGeometry(inputShape: [2, 2], kernelSize: 1, dilation: 1, padding: 0, stride: 1) },
                       "Input Error: Only 3D or 4D input Tensors are supported (got 2D)")

        XCTAssertEqual(message { try F.gridSampleCheck(inputShape: [1, 1, 3, 3], gridShape: [1, 2, 2, 3], inputDType: .float32, gridDType: .float32, mode: .bilinear) },
                       "grid_sampler(): expected grid to have size 2 in last dimension, but got grid with sizes [1, 2, 2, 3]")
        XCTAssertEqual(message { try F.gridSampleCheck(inputShape: [1, 1, 3, 3], gridShape: [2, 2, 2, 2], inputDType: .float32, gridDType: .float32, mode: .bilinear) },
                       "grid_sampler(): expected grid and input to have same batch size, but got input with sizes [1, 1, 3, 3] and grid with sizes [2, 2, 2, 2]")
        XCTAssertNotNil(message { try F.gridSampleCheck(inputShape: [1, 1, 3, 3], gridShape: [1, 2, 2, 2], inputDType: .float32, gridDType: .float64, mode: .bilinear) })
        XCTAssertNil(message { try F.gridSampleCheck(inputShape: [1, 1, 3, 3, 3], gridShape: [1, 2, 2, 2, 3], inputDType: .float64, gridDType: .float64, mode: .bicubic) })

        XCTAssertEqual(message { try F.pixelShuffleCheck([1, 5, 2, 2], upscaleFactor: 2) },
                       "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)=5 is not divisible by 4")
        XCTAssertEqual(message { try F.pixelShuffleCheck([5, 2], upscaleFactor: 2) },
                       "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)")
    }

    func testSpellingsCompileAndRun() {
        let x = torch.randn(2, 10, 8, 8)
        let layers: [nn.Module] = [
            nn.PReLU(10), nn.ReLU(inplace: true), nn.Softmax(dim: 1), nn.MaxPool2d(2, 2, ceilMode: true),
            nn.MaxPool2d(kernelSize: 2, stride: 2), nn.MaxPool2d(2), nn.BatchNorm2d(10, momentum: nil),
            nn.Conv2d(10, 6, 3), nn.Upsample(scaleFactor: 2, mode: .bilinear), nn.InstanceNorm2d(10),
        ]
        let shapes = layers.map { $0(x.clone()).shape }
        XCTAssertEqual(shapes, [[2, 10, 8, 8], [2, 10, 8, 8], [2, 10, 8, 8], [2, 10, 4, 4], [2, 10, 4, 4], [2, 10, 4, 4],
                                [2, 10, 8, 8], [2, 6, 6, 6], [2, 10, 16, 16], [2, 10, 8, 8]])
        XCTAssertEqual(layers[0].description, "PReLU(num_parameters=10)")
        XCTAssertEqual(layers[3].description, "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=True)")
        // momentum nil: running statistics are the cumulative average of the batches seen.
        let bn = nn.BatchNorm2d(3, momentum: nil)
        let a = torch.randn(4, 3, 2, 2), b = torch.randn(4, 3, 2, 2)
        _ = bn(a); _ = bn(b)
        let expected = (a.mean(dim: [0, 2, 3]) + b.mean(dim: [0, 2, 3])) / 2
        assertClose(bn.runningMean!, expected, atol: 1e-6, rtol: 1e-5)
        XCTAssertEqual(F.interpolate(torch.randn(1, 1, 4, 4), scaleFactor: 2).shape, [1, 1, 8, 8])
        XCTAssertEqual(F.interpolate(torch.randn(1, 1, 4, 4), scaleFactor: [0.5, 1.5], mode: .area).shape, [1, 1, 2, 6])
        XCTAssertEqual(F.interpolate(torch.randn(1, 1, 4, 4), size: 3, mode: .nearestExact).shape, [1, 1, 3, 3])
        // PyTorch's node names; uint8 images resize with the nearest modes.
        let img = torch.randn(1, 1, 4, 4, requiresGrad: true)
        XCTAssertEqual(F.interpolate(img, size: 3, mode: .bilinear).gradFn?.name, "UpsampleBilinear2DBackward0")
        XCTAssertEqual(F.interpolate(img, size: 3, mode: .bicubic, antialias: true).gradFn?.name, "UpsampleBicubic2DAaBackward0")
        XCTAssertEqual(F.interpolate(img, scaleFactor: 2).gradFn?.name, "UpsampleNearest2DBackward0")
        let bytes = torch.tensor([[[[0, 10], [20, 30]]]]).to(.uint8)
        XCTAssertEqual(F.interpolate(bytes, scaleFactor: 2).toArray(as: UInt8.self),
                       [0, 0, 10, 10, 0, 0, 10, 10, 20, 20, 30, 30, 20, 20, 30, 30])
    }
}
