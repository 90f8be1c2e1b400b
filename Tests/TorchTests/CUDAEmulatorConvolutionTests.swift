import XCTest
@testable import Torch
import TutorialModels

/// Convolutions on the CUDA host emulator (im2col + GEMM) against the CPU kernels: 1-, 2- and 3-D, stride,
/// padding, dilation, groups (depthwise too), transposed with output padding, bias, and every gradient. float32
/// gradients sum dozens of products in another order than the CPU's kernels, hence 1e-4.
final class CUDAEmulatorConvolutionTests: CUDAEmulatorTestCase {

    func testConv2dForwardAndGradientsWithEveryOption() {
        let cases: [(String, [Int], [Int], Int, Int, Int, Int)] = [
            // name, input, weight, stride, padding, dilation, groups
            ("3x3 pad 1", [2, 3, 9, 8], [4, 3, 3, 3], 1, 1, 1, 1),
            ("5x5 stride 2", [3, 2, 11, 10], [5, 2, 5, 5], 2, 0, 1, 1),
            ("dilation 2, groups 2", [2, 4, 9, 9], [6, 2, 3, 3], 1, 2, 2, 2),
            ("depthwise stride 2", [2, 6, 8, 7], [6, 1, 3, 3], 2, 1, 1, 6),
            ("1x1", [2, 5, 4, 4], [3, 5, 1, 1], 1, 0, 1, 1),
        ]
        for (name, xs, ws, stride, padding, dilation, groups) in cases {
            assertSameOnBothDevices("conv2d \(name)", tol: 1e-4) { dev in
                let x = data(xs, seed: 1, on: dev, requiresGrad: true), w = data(ws, seed: 2, on: dev, requiresGrad: true)
                let b = data([ws[0]], seed: 3, on: dev, requiresGrad: true)
                let y = F.conv2d(x, w, b, stride: stride, padding: padding, dilation: dilation, groups: groups)
                (y * y).sum().backward()
                return [y, x.grad!, w.grad!, b.grad!]
            }
        }
    }

    func testConv1dConv3dAndTransposedConvolutions() {
        assertSameOnBothDevices("conv1d, conv3d, convTranspose2d with output padding", tol: 1e-4) { dev in
            let x1 = data([2, 3, 17], seed: 4, on: dev, requiresGrad: true), w1 = data([4, 3, 4], seed: 5, on: dev, requiresGrad: true)
            let y1 = F.conv1d(x1, w1, stride: 3, padding: 2)
            let x3 = data([1, 2, 5, 6, 4], seed: 6, on: dev, requiresGrad: true), w3 = data([3, 2, 2, 3, 2], seed: 7, on: dev, requiresGrad: true)
            let y3 = F.conv3d(x3, w3, padding: 1)
            let xt = data([2, 4, 5, 6], seed: 8, on: dev, requiresGrad: true), wt = data([4, 3, 3, 3], seed: 9, on: dev, requiresGrad: true)
            let bt = data([3], seed: 10, on: dev, requiresGrad: true)
            let yt = F.convTranspose2d(xt, wt, bt, stride: 2, padding: 1, outputPadding: 1)
            (y1.pow(2).sum() + y3.sum() + yt.pow(2).sum()).backward()
            return [y1, y3, yt, x1.grad!, w1.grad!, x3.grad!, w3.grad!, xt.grad!, wt.grad!, bt.grad!]
        }
    }

    func testLeNet5AndTheFashionCNNTrainAsOnTheCPU() {
        for name in ["LeNet-5", "Fashion-MNIST CNN (BatchNorm2d)"] {
            assertSameOnBothDevices("\(name), 3 SGD momentum steps", tol: 1e-4) { dev in
                torch.manualSeed(31)
                let model: nn.Module = name == "LeNet-5" ? TutorialLeNet5() : FashionCNN()
                model.to(dev)
                let opt = optim.SGD(model.parameters(), lr: 0.05, momentum: 0.9)
                let x = data(name == "LeNet-5" ? [4, 3, 32, 32] : [4, 1, 28, 28], seed: 32, on: dev)
                let y = torch.tensor([1, 7, 3, 0]).to(dev)
                var losses: [Tensor] = []
                for _ in 0..<3 {
                    opt.zeroGrad()
                    let loss = F.crossEntropy(model(x), y)
                    loss.backward()
                    opt.step()
                    losses.append(loss.detach())
                }
                return losses + [model.parameters()[0].detach()]
            }
        }
    }

    func testLargeBatchesGoInChunks() {
        let saved = CUDAConvolution.columnBudget
        CUDAConvolution.columnBudget = 3 * 4 * 9 * 64 * 8   // three images per chunk for the shapes below
        defer { CUDAConvolution.columnBudget = saved }
        assertSameOnBothDevices("conv2d over 7 images in chunks of 3", tol: 1e-4) { dev in
            let x = data([7, 4, 8, 8], seed: 11, on: dev, requiresGrad: true), w = data([5, 4, 3, 3], seed: 12, on: dev, requiresGrad: true)
            let y = F.conv2d(x, w, padding: 1)
            y.pow(2).sum().backward()
            return [y, x.grad!, w.grad!]
        }
    }
}

/// Pooling on the CUDA host emulator against the CPU kernels: max (with indices, ceil mode, padding, dilation,
/// NaN), average (count_include_pad, divisor override), adaptive average and max, 1-D to 3-D, with gradients.
final class CUDAEmulatorPoolingTests: CUDAEmulatorTestCase {

    func testMaxAndAveragePoolingWithGradients() {
        assertSameOnBothDevices("max/avg/adaptive pooling and their gradients", tol: 1e-5) { dev in
            let x = data([2, 3, 9, 11], seed: 21, on: dev, requiresGrad: true)
            let (m, mi) = F.maxPoolWithIndices(x, dims: 2, kernelSize: 3, stride: 2, padding: 1, ceilMode: true)
            let md = F.maxPool2d(x, 2, stride: 1, dilation: 2)
            let a = F.avgPool2d(x, 3, stride: 2, padding: 1, countIncludePad: false)
            let ad = F.avgPool2d(x, 2, divisorOverride: 3)
            let aa = F.adaptiveAvgPool2d(x, [4, 3]), am = F.adaptiveMaxPool2d(x, [2, 5])
            let x1 = data([2, 4, 13], seed: 22, on: dev, requiresGrad: true), x3 = data([1, 2, 4, 5, 6], seed: 23, on: dev, requiresGrad: true)
            let m1 = F.maxPool1d(x1, 3), a3 = F.avgPool3d(x3, 2, stride: 1)
            (m.pow(2).sum() + md.sum() + a.pow(2).sum() + ad.sum() + aa.pow(2).sum() + am.sum() + m1.sum() + a3.pow(2).sum()).backward()
            return [m, mi, md, a, ad, aa, am, m1, a3, x.grad!, x1.grad!, x3.grad!]
        }
        assertSameOnBothDevices("max pooling propagates NaN", tol: 0) { dev in
            let x = torch.tensor([[[[1.0, Double.nan, 3, 4], [5, 6, 7, 8]]]]).float().to(dev)
            let (m, mi) = F.maxPoolWithIndices(x, dims: 2, kernelSize: 2)
            return [m, mi]
        }
    }
}
