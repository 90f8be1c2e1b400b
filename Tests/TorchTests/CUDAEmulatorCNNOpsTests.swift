import XCTest
@testable import Torch

/// The CNN ops around convolutions and pooling on the CUDA host emulator against the CPU: `F.interpolate` and
/// `nn.Upsample` (every mode, `alignCorners` both ways, sizes and scale factors), `F.pad` and the pad modules,
/// pixel (un)shuffle, fold/unfold, `F.gridSample` / `F.affineGrid`, local response norm, max unpooling, adaptive,
/// LP and 3-D pooling, batch, group and instance norm. Values and gradients, float32 and float64, odd shapes and
/// a non-contiguous (transposed) input in every family.
final class CUDAEmulatorCNNOpsTests: CUDAEmulatorTestCase {

    private let floatTypes: [DType] = [.float32, .float64]

    /// The tolerance of a comparison in `dt`: float32 sums run in other orders on the two devices.
    private func tol(_ dt: DType) -> Double { dt == .float32 ? 1e-4 : 1e-10 }

    /// A fixed random `dt` tensor (made on the CPU) on `device`, a leaf that requires grad unless told not to.
    private func sample(_ shape: [Int], seed: UInt64, _ dt: DType, on device: Device, grad: Bool = true) -> Tensor {
        torch.manualSeed(seed)
        let t = torch.randn(shape).to(dt).to(device)
        return grad ? t.requiresGrad_() : t
    }

    /// A scalar loss that weighs every element of `y` differently (so gradients are not all alike).
    private func loss(_ y: Tensor, seed: UInt64) -> Tensor {
        torch.manualSeed(seed)
        let w = torch.rand(y.shape).to(y.dtype).to(y.device)
        return (y * w).sum()
    }

    // MARK: interpolate / Upsample

    func testInterpolateEveryModeWithGradients() {
        typealias Case = (name: String, shape: [Int], run: (Tensor) -> Tensor)
        let cases: [Case] = [
            ("nearest 1-D scale 2", [2, 3, 7], { F.interpolate($0, scaleFactor: 2) }),
            ("nearest 2-D size", [2, 3, 7, 6], { F.interpolate($0, size: [5, 9]) }),
            ("nearest 3-D scales", [1, 2, 3, 5, 4], { F.interpolate($0, scaleFactor: [2.0, 1.5, 0.5]) }),
            ("nearest-exact 2-D scale 1.7", [2, 2, 5, 7], { F.interpolate($0, scaleFactor: 1.7, mode: .nearestExact) }),
            ("linear size 11", [2, 3, 7], { F.interpolate($0, size: 11, mode: .linear) }),
            ("linear aligned down", [2, 3, 9], { F.interpolate($0, size: 4, mode: .linear, alignCorners: true) }),
            ("bilinear scale 1.5", [2, 3, 5, 7], { F.interpolate($0, scaleFactor: 1.5, mode: .bilinear) }),
            ("bilinear aligned size", [1, 3, 6, 5], { F.interpolate($0, size: [4, 13], mode: .bilinear, alignCorners: true) }),
            ("bilinear recomputed scale", [1, 2, 5, 5], {
                F.interpolate($0, scaleFactor: 1.3, mode: .bilinear, recomputeScaleFactor: true) }),
            ("bilinear antialias down", [1, 2, 11, 9], { F.interpolate($0, size: [4, 5], mode: .bilinear, antialias: true) }),
            ("bicubic size", [2, 2, 6, 5], { F.interpolate($0, size: [9, 4], mode: .bicubic) }),
            ("bicubic aligned", [1, 3, 5, 6], { F.interpolate($0, scaleFactor: 2, mode: .bicubic, alignCorners: true) }),
            ("bicubic antialias down", [1, 2, 10, 9], { F.interpolate($0, size: [3, 4], mode: .bicubic, antialias: true) }),
            ("trilinear scale 2", [1, 2, 3, 4, 5], { F.interpolate($0, scaleFactor: 2, mode: .trilinear) }),
            ("trilinear aligned size", [2, 1, 4, 3, 5], { F.interpolate($0, size: [3, 7, 2], mode: .trilinear, alignCorners: true) }),
            ("area", [2, 3, 9, 7], { F.interpolate($0, size: [4, 3], mode: .area) }),
            ("Upsample bilinear aligned", [2, 3, 4, 5], { nn.Upsample(scaleFactor: 2, mode: .bilinear, alignCorners: true)($0) }),
            ("UpsamplingNearest2d", [1, 3, 4, 5], { nn.UpsamplingNearest2d(scaleFactor: 3)($0) }),
            ("UpsamplingBilinear2d", [1, 3, 4, 5], { nn.UpsamplingBilinear2d(size: [7, 3])($0) }),
        ]
        for dt in floatTypes {
            for c in cases {
                assertSameOnBothDevices("interpolate \(c.name) \(dt.name)", tol: tol(dt)) { dev in
                    let x = sample(c.shape, seed: 1, dt, on: dev)
                    let y = c.run(x)
                    loss(y, seed: 2).backward()
                    return [y, x.grad!]
                }
            }
            assertSameOnBothDevices("interpolate of a transposed input, second derivative \(dt.name)", tol: tol(dt)) { dev in
                let x = sample([2, 3, 6, 5], seed: 3, dt, on: dev)
                let y = F.interpolate(x.transpose(2, 3), size: [7, 9], mode: .bilinear)
                let g = torch.autograd.grad([loss(y * y, seed: 4)], [x], createGraph: true)[0]!
                let gg = torch.autograd.grad([(g * g).sum()], [x])[0]!
                return [y, g, gg]
            }
        }
        assertSameOnBothDevices("nearest interpolation of uint8 images", tol: 0) { dev in
            torch.manualSeed(5)
            let x = torch.randint(0, 256, [1, 3, 5, 4]).to(.uint8).to(dev)
            return [F.interpolate(x, scaleFactor: 2), F.interpolate(x, size: [3, 7], mode: .nearestExact)]
        }
    }

    // MARK: padding

    func testPadEveryModeAndThePadModules() {
        for dt in floatTypes {
            assertSameOnBothDevices("F.pad 1-D, 2-D, 3-D every mode \(dt.name)", tol: tol(dt)) { dev in
                let x1 = sample([2, 3, 7], seed: 11, dt, on: dev)
                let x2 = sample([2, 3, 5, 6], seed: 12, dt, on: dev)
                let x3 = sample([1, 2, 4, 3, 5], seed: 13, dt, on: dev)
                var ys: [Tensor] = []
                for mode in [F.PadMode.constant, .reflect, .replicate, .circular] {
                    ys.append(F.pad(x1, [2, 3], mode: mode))
                    ys.append(F.pad(x2, [1, 2, 2, 1], mode: mode))
                    ys.append(F.pad(x3, [1, 0, 2, 1, 1, 2], mode: mode))
                }
                ys.append(F.pad(x2, [-1, 2, 3, -2], value: 1.5))                 // constant crops too
                ys.append(F.pad(x2.transpose(2, 3), [1, 2, 2, 1], mode: .reflect))  // a strided input
                ys.append(F.pad(x1, [-2, 1], mode: .circular))
                var total = loss(ys[0], seed: 14)
                for (i, y) in ys.enumerated().dropFirst() { total = total + loss(y, seed: 14 + UInt64(i)) }
                total.backward()
                return ys + [x1.grad!, x2.grad!, x3.grad!]
            }
        }
        assertSameOnBothDevices("pad modules", tol: 1e-5) { dev in
            let x1 = sample([2, 3, 6], seed: 15, .float32, on: dev)
            let x2 = sample([1, 2, 5, 4], seed: 16, .float32, on: dev)
            let x3 = sample([1, 2, 3, 4, 3], seed: 17, .float32, on: dev)
            let modules: [(nn.Module, Tensor)] = [
                (nn.ConstantPad1d([1, 2], 0.5), x1), (nn.ZeroPad2d([1, 1, 2, 0]), x2), (nn.ConstantPad3d(1, -1), x3),
                (nn.ReflectionPad1d(2), x1), (nn.ReflectionPad2d([1, 2, 0, 3]), x2), (nn.ReflectionPad3d(1), x3),
                (nn.ReplicationPad1d([3, 1]), x1), (nn.ReplicationPad2d(2), x2), (nn.ReplicationPad3d([1, 0, 2, 1, 0, 2]), x3),
                (nn.CircularPad1d(2), x1), (nn.CircularPad2d([1, 2, 2, 1]), x2), (nn.CircularPad3d(1), x3),
            ]
            let ys = modules.map { m, x in m(x) }
            var total = loss(ys[0], seed: 18)
            for (i, y) in ys.enumerated().dropFirst() { total = total + loss(y, seed: 18 + UInt64(i)) }
            total.backward()
            return ys + [x1.grad!, x2.grad!, x3.grad!]
        }
    }

    // MARK: pixel shuffle, fold / unfold

    func testPixelShuffleAndUnshuffle() {
        for dt in floatTypes {
            assertSameOnBothDevices("pixel shuffle / unshuffle / channel shuffle \(dt.name)", tol: tol(dt)) { dev in
                let x = sample([2, 18, 3, 5], seed: 21, dt, on: dev)
                let z = sample([3, 2, 6, 9], seed: 22, dt, on: dev)
                let up = nn.PixelShuffle(3)(x), down = nn.PixelUnshuffle(3)(z.transpose(2, 3))
                let ch = F.channelShuffle(x, 6)
                (loss(up, seed: 23) + loss(down, seed: 24) + loss(ch, seed: 25)).backward()
                return [up, down, ch, x.grad!, z.grad!]
            }
        }
    }

    func testFoldAndUnfold() {
        for dt in floatTypes {
            assertSameOnBothDevices("unfold / fold with dilation, padding, stride \(dt.name)", tol: tol(dt)) { dev in
                let x = sample([2, 3, 7, 6], seed: 31, dt, on: dev)
                let cols = F.unfold(x, kernelSize: [2, 3], dilation: [1, 2], padding: 1, stride: [2, 1])
                let plain = nn.Unfold(kernelSize: 3)(x.transpose(2, 3))
                let c = sample([2, 3 * 2 * 2, 20], seed: 32, dt, on: dev)
                let image = F.fold(c, outputSize: [5, 8], kernelSize: 2, padding: [0, 1], stride: [1, 2])
                let round = nn.Fold(outputSize: [7, 6], kernelSize: [2, 3], dilation: [1, 2], padding: 1, stride: [2, 1])(cols)
                let unbatched = F.unfold(x[0], kernelSize: 2)
                (loss(cols, seed: 33) + loss(plain, seed: 34) + loss(image, seed: 35) + loss(round, seed: 36)
                 + loss(unbatched, seed: 37)).backward()
                return [cols, plain, image, round, unbatched, x.grad!, c.grad!]
            }
        }
    }

    // MARK: grid sampling

    func testGridSampleAndAffineGrid() {
        for dt in floatTypes {
            for mode in [F.GridSampleMode.bilinear, .nearest, .bicubic] {
                for padding in [F.GridSamplePadding.zeros, .border, .reflection] {
                    for align in [false, true] {
                        let name = "gridSample \(mode.rawValue) \(padding.rawValue) align \(align) \(dt.name)"
                        assertSameOnBothDevices(name, tol: tol(dt)) { dev in
                            let x = sample([2, 3, 5, 6], seed: 41, dt, on: dev)
                            // Locations beyond [-1, 1] too, so every padding mode matters.
                            let grid = (sample([2, 4, 7, 2], seed: 42, dt, on: dev, grad: false) * 0.8).requiresGrad_()
                            let y = F.gridSample(x, grid, mode: mode, paddingMode: padding, alignCorners: align)
                            loss(y, seed: 43).backward()
                            return mode == .nearest ? [y, x.grad!] : [y, x.grad!, grid.grad!]
                        }
                    }
                }
            }
            assertSameOnBothDevices("affineGrid 2-D and 3-D into gridSample, transposed input \(dt.name)", tol: tol(dt)) { dev in
                torch.manualSeed(44)
                let theta = (torch.eye(2, 3).unsqueeze(0).expand(2, 2, 3) + torch.randn(2, 2, 3) * 0.2).to(dt).to(dev).requiresGrad_()
                let theta3 = (torch.eye(3, 4).unsqueeze(0) + torch.randn(1, 3, 4) * 0.2).to(dt).to(dev).requiresGrad_()
                let x = sample([2, 3, 6, 5], seed: 45, dt, on: dev)
                let v = sample([1, 2, 3, 4, 5], seed: 46, dt, on: dev)
                let grid = F.affineGrid(theta, size: [2, 3, 4, 7], alignCorners: false)
                let grid3 = F.affineGrid(theta3, size: [1, 2, 3, 3, 4], alignCorners: true)
                let y = F.gridSample(x.transpose(2, 3), grid, alignCorners: false)
                let y3 = F.gridSample(v, grid3, paddingMode: .border, alignCorners: true)
                (loss(y, seed: 47) + loss(y3, seed: 48)).backward()
                return [grid, grid3, y, y3, theta.grad!, theta3.grad!, x.grad!, v.grad!]
            }
        }
    }

    // MARK: normalisation

    func testLocalResponseNorm() {
        for dt in floatTypes {
            assertSameOnBothDevices("local response norm 3-D, 4-D, 5-D \(dt.name)", tol: tol(dt)) { dev in
                let x = sample([2, 7, 4, 5], seed: 51, dt, on: dev)
                let x1 = sample([3, 5, 6], seed: 52, dt, on: dev), x3 = sample([1, 6, 2, 3, 4], seed: 53, dt, on: dev)
                let y = nn.LocalResponseNorm(3, alpha: 0.1, beta: 0.75, k: 2)(x)
                let y1 = F.localResponseNorm(x1.transpose(1, 2), size: 4)
                let y3 = F.localResponseNorm(x3, size: 2, alpha: 0.5)
                (loss(y, seed: 54) + loss(y1, seed: 55) + loss(y3, seed: 56)).backward()
                return [y, y1, y3, x.grad!, x1.grad!, x3.grad!]
            }
        }
    }

    func testBatchNormTrainAndEval() {
        for dt in floatTypes {
            for momentum in [0.1, nil] as [Double?] {
                assertSameOnBothDevices("BatchNorm1d/2d/3d train then eval, momentum \(momentum.map { "\($0)" } ?? "nil") \(dt.name)",
                                        tol: tol(dt)) { dev in
                    torch.manualSeed(61)
                    let bns: [nn.BatchNormBase] = [nn.BatchNorm1d(3, momentum: momentum, dtype: dt),
                                                   nn.BatchNorm2d(3, momentum: momentum, dtype: dt),
                                                   nn.BatchNorm3d(3, momentum: momentum, affine: false, dtype: dt)]
                    let xs = [sample([5, 3], seed: 62, dt, on: dev), sample([2, 3, 5, 4], seed: 63, dt, on: dev),
                              sample([2, 3, 2, 3, 4], seed: 64, dt, on: dev)]
                    var out: [Tensor] = []
                    for (bn, x) in zip(bns, xs) {
                        bn.to(dev)
                        bn.train()
                        // A fresh (strided) view per forward: each backward releases the graph it ran.
                        func input() -> Tensor { x.dim == 4 ? x.transpose(2, 3) : x }
                        let y = bn(input())
                        let y2 = bn(input() * 2 + 1)
                        (loss(y, seed: 65) + loss(y2, seed: 66)).backward()
                        bn.eval()
                        let e = bn(input())
                        loss(e, seed: 67).backward()
                        out += [y, y2, e, x.grad!, bn.runningMean!, bn.runningVar!]
                        if let w = bn.weight { out += [w.grad!, bn.bias!.grad!] }
                    }
                    return out
                }
            }
        }
    }

    func testGroupNormAndInstanceNorm() {
        for dt in floatTypes {
            assertSameOnBothDevices("GroupNorm and InstanceNorm1d/2d/3d \(dt.name)", tol: tol(dt)) { dev in
                torch.manualSeed(71)
                let gn = nn.GroupNorm(2, 6, dtype: dt)
                let in1 = nn.InstanceNorm1d(3, affine: true, dtype: dt)
                let in2 = nn.InstanceNorm2d(3, trackRunningStats: true, dtype: dt)
                let in3 = nn.InstanceNorm3d(2, dtype: dt)
                for m in [gn, in1, in2, in3] as [nn.Module] { m.to(dev) }
                let x = sample([3, 6, 5, 4], seed: 72, dt, on: dev)
                let x1 = sample([2, 3, 7], seed: 73, dt, on: dev), x2 = sample([2, 3, 4, 5], seed: 74, dt, on: dev)
                let x3 = sample([2, 2, 3, 2, 4], seed: 75, dt, on: dev)
                let g = gn(x.transpose(2, 3)), i1 = in1(x1), i2 = in2(x2), i3 = in3(x3)
                (loss(g, seed: 76) + loss(i1, seed: 77) + loss(i2, seed: 78) + loss(i3, seed: 79)).backward()
                in2.eval()
                let e2 = in2(x2)
                return [g, i1, i2, i3, e2, x.grad!, x1.grad!, x2.grad!, x3.grad!, gn.weight!.grad!, gn.bias!.grad!,
                        in1.weight!.grad!, in2.runningMean!, in2.runningVar!]
            }
        }
    }

    // MARK: pooling beyond max/avg 2-D

    func testMaxUnpoolAdaptiveLPAnd3DPooling() {
        for dt in floatTypes {
            assertSameOnBothDevices("max unpool, adaptive 1/2/3-D, LP, 3-D pooling \(dt.name)", tol: tol(dt)) { dev in
                let x = sample([2, 3, 8, 7], seed: 81, dt, on: dev)
                let x1 = sample([2, 3, 11], seed: 82, dt, on: dev), x3 = sample([1, 2, 5, 6, 7], seed: 83, dt, on: dev)
                let (p, idx) = F.maxPoolWithIndices(x, dims: 2, kernelSize: 2)
                let un = nn.MaxUnpool2d(2)(p, idx, outputSize: [8, 7])
                let ys = [
                    un,
                    nn.AdaptiveAvgPool1d(4)(x1), nn.AdaptiveMaxPool1d(5)(x1),
                    nn.AdaptiveAvgPool2d([3, 5])(x.transpose(2, 3)), nn.AdaptiveMaxPool2d(3)(x),
                    nn.AdaptiveAvgPool3d([2, 3, 4])(x3), nn.AdaptiveMaxPool3d([3, 2, 5])(x3),
                    nn.LPPool2d(2, 3, stride: 2)(x), F.lpPool1d(x1, 3, 2),
                    nn.AvgPool3d(2, stride: [1, 2, 2], padding: 1)(x3), nn.MaxPool3d(3, stride: 2, padding: 1)(x3),
                ]
                var total = loss(ys[0], seed: 84)
                for (i, y) in ys.enumerated().dropFirst() { total = total + loss(y, seed: 84 + UInt64(i)) }
                total.backward()
                return ys + [idx, x.grad!, x1.grad!, x3.grad!]
            }
        }
    }
}
