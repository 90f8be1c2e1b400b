import XCTest
#if canImport(Glibc)
import Glibc
#endif
@testable import Torch

/// A user dataset as tutorial 002 writes it.
private final class MyDataset: Dataset {
    let x: Tensor, y: Tensor
    init(_ x: Tensor, _ y: Tensor) { self.x = x.clone().detach(); self.y = y.clone().detach() }
    var count: Int { x.size(0) }
    subscript(ix: Int) -> (Tensor, Tensor) { (x.select(0, ix), y.select(0, ix)) }
}

/// Tutorial 001's dataset of plain numbers.
private struct MyDs: Dataset {
    let data: [Int], label: [Int]
    var count: Int { data.count }
    subscript(index: Int) -> (Int, Int) { (data[index], label[index]) }
}

/// A dataset whose samples take index-dependent time, to scramble worker completion order.
private struct SlowDataset: Dataset {
    let n: Int
    var count: Int { n }
    subscript(index: Int) -> (Tensor, Int) {
        usleep(UInt32((index * 7919) % 5) * 300)
        return (torch.full([2], Double(index)), index)
    }
}

final class DataLoaderTests: XCTestCase {
    private func ds(_ n: Int) -> TensorDataset<(Tensor, Tensor)> {
        TensorDataset(torch.arange(n).float().unsqueeze(1) * 10, torch.arange(n))
    }

    private func labels(_ dl: DataLoader<(Tensor, Tensor)>) -> [[Int]] {
        dl.map { $0.1.toArray(as: Int.self) }
    }

    // `after` values are the default generator's next torch.rand(3, float64) once an iteration is
    // done: equal up to the last bit of the uniform formula only if the random streams are aligned.

    private func generator(_ seed: Any?) -> Generator? {
        (seed as? Int).map { Generator().manualSeed(UInt64($0)) }
    }

    // MARK: - Batching

    func testRosettaLoop() {
        let X = torch.tensor([[1, 2], [3, 4], [5, 6], [7, 8]]).float()
        let Y = torch.tensor([[3], [7], [11], [15]]).float()
        torch.manualSeed(0)
        let dl = DataLoader(TensorDataset(X, Y), batchSize: 2, shuffle: true)
        XCTAssertEqual(dl.count, 2)
        var seen: [Double] = []
        for (x, y) in dl {
            XCTAssertEqual(x.shape, [2, 2])
            XCTAssertEqual(y.shape, [2, 1])
            XCTAssertEqual(x.dtype, .float32)
            // y = x0 + x1 holds row by row after shuffling
            assertClose(x.sum(dim: 1, keepdim: true), y)
            seen += y.toArray(as: Double.self)
        }
        XCTAssertEqual(seen.sorted(), [3, 7, 11, 15])
        // PyTorch's order for this program (tutorial 002): batches [2, 1], [3, 0] in epoch 1.
        XCTAssertEqual(seen, [11, 7, 15, 3])
    }

    func testBatchingDropLastAndCount() {
        let d = ds(10)
        let dl = DataLoader(d, batchSize: 3)
        XCTAssertEqual(dl.count, 4)
        XCTAssertEqual(labels(dl), [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]])
        let batches = Array(dl)
        XCTAssertEqual(batches[0].0.shape, [3, 1])
        assertClose(batches[1].0, [30, 40, 50])
        XCTAssertEqual(batches[1].1.dtype, .int64)

        let dropped = DataLoader(d, batchSize: 3, dropLast: true)
        XCTAssertEqual(dropped.count, 3)
        XCTAssertEqual(labels(dropped), [[0, 1, 2], [3, 4, 5], [6, 7, 8]])
        XCTAssertEqual(DataLoader(d, batchSize: 5, dropLast: true).count, 2)
        XCTAssertEqual(DataLoader(d, batchSize: 20).count, 1)
        XCTAssertEqual(DataLoader(d, batchSize: 20, dropLast: true).count, 0)
        XCTAssertEqual(Array(DataLoader(d, batchSize: 20, dropLast: true)).count, 0)
        XCTAssertEqual(DataLoader(d).count, 10)
        // the bare and namespaced spellings name the same types
        let namespaced: utils.data.DataLoader<(Tensor, Tensor)> = DataLoader(dataset: d, batchSize: 4)
        XCTAssertEqual(namespaced.count, 3)
        XCTAssertEqual(Array(namespaced.enumerated()).map { $0.offset }, [0, 1, 2])
    }

    func testTensorDatasetArities() {
        let a = torch.arange(4), b = torch.arange(4) * 2, c = torch.arange(8).view(4, 2), d = torch.ones(4)
        let one = TensorDataset(a)
        XCTAssertEqual(one[2].item(), 2)
        XCTAssertEqual(DataLoader(one, batchSize: 4).map { $0.toArray(as: Int.self) }, [[0, 1, 2, 3]])
        let three = TensorDataset(a, b, c)
        let (x, y, z) = three[3]
        XCTAssertEqual([x.item(), y.item()], [3, 6])
        XCTAssertEqual(z.toArray(as: Int.self), [6, 7])
        for (xa, yb, zc) in DataLoader(three, batchSize: 2) {
            XCTAssertEqual(xa.shape, [2]); XCTAssertEqual(yb.shape, [2]); XCTAssertEqual(zc.shape, [2, 2])
        }
        let four = TensorDataset(a, b, c, d)
        XCTAssertEqual(four.count, 4)
        XCTAssertEqual(four[1].3.item(), 1)
        let many = TensorDataset(tensors: [a, b, c, d, a])
        XCTAssertEqual(many[1].count, 5)
        let batch = Array(DataLoader(many, batchSize: 4))[0]
        XCTAssertEqual(batch.map { $0.shape }, [[4], [4], [4, 2], [4], [4]])
        XCTAssertEqual(TensorDataset(tensors: [a, b]).tensors.count, 2)
    }

    func testUserDatasets() {
        let X = torch.tensor([[1, 2], [3, 4], [5, 6], [7, 8]]).float()
        let Y = torch.tensor([[3], [7], [11], [15]]).float()
        for (x, y) in DataLoader(MyDataset(X, Y), batchSize: 2) {
            XCTAssertEqual(x.shape, [2, 2]); XCTAssertEqual(y.shape, [2, 1])
        }
        var inputs: [Tensor] = []
        for (input, label) in DataLoader(MyDs(data: [1, 2, 3, 4], label: [0, 1, 1, 1]), batchSize: 2, shuffle: true) {
            XCTAssertEqual(input.dtype, .int64)
            XCTAssertEqual(label.dtype, .int64)
            inputs.append(input)
        }
        XCTAssertEqual(inputs.flatMap { $0.toArray(as: Int.self) }.sorted(), [1, 2, 3, 4])
        // Arrays are datasets (like Python lists)
        XCTAssertEqual(DataLoader([1.5, 2.5, 3.5], batchSize: 2).map { $0.toArray(as: Double.self) }, [[1.5, 2.5], [3.5]])
        XCTAssertEqual(DataLoader([1.5, 2.5], batchSize: 2).map { $0.dtype }, [.float64])
    }

    // MARK: - PyTorch order (fixtures)

    func testShuffleOrderMatchesPyTorch() throws {
        for c in try loadFixtureCases("data") where c["kind"] as? String == "loader" {
            let n = c["n"] as! Int, bs = c["batchSize"] as! Int
            torch.manualSeed(UInt64(c["seed"] as! Int))
            let g = generator(c["generatorSeed"])
            let dl = DataLoader(ds(n), batchSize: bs, shuffle: c["shuffle"] as? Bool ?? true,
                                dropLast: c["dropLast"] as! Bool, generator: g)
            let expected = c["epochs"] as! [[[Int]]]
            for (e, epoch) in expected.enumerated() {
                XCTAssertEqual(labels(dl), epoch, "seed \(c["seed"]!) n \(n) epoch \(e)")
            }
            assertClose(torch.rand(3, dtype: .float64), c["after"] as! [Double], atol: 1e-12, rtol: 0)
            if let ga = c["generatorAfter"] as? [Double] {
                assertClose(torch.rand(3, dtype: .float64, generator: g), ga, atol: 1e-12, rtol: 0)
            }
        }
    }

    func testSamplersMatchPyTorch() throws {
        var checked = 0
        for c in try loadFixtureCases("data") {
            let kind = c["kind"] as! String
            let sampler: any utils.data.Sampler<Int>
            switch kind {
            case "randomSampler":
                sampler = utils.data.RandomSampler(0..<(c["n"] as! Int), replacement: c["replacement"] as! Bool,
                                                   numSamples: c["numSamples"] as? Int, generator: generator(c["generatorSeed"]))
            case "subsetRandomSampler":
                sampler = utils.data.SubsetRandomSampler(c["indices"] as! [Int], generator: generator(c["generatorSeed"]))
            case "weightedRandomSampler":
                sampler = utils.data.WeightedRandomSampler(c["weights"] as! [Double], c["numSamples"] as! Int,
                                                           replacement: c["replacement"] as! Bool, generator: generator(c["generatorSeed"]))
            case "batchSampler":
                let n = c["n"] as! Int
                let base: any utils.data.Sampler<Int> = c["generatorSeed"] is Int
                    ? utils.data.RandomSampler(0..<n, generator: generator(c["generatorSeed"]))
                    : utils.data.SequentialSampler(0..<n)
                let bs = utils.data.BatchSampler(sampler: base, batchSize: c["batchSize"] as! Int, dropLast: c["dropLast"] as! Bool)
                let epochs = c["epochs"] as! [[[Int]]]
                XCTAssertEqual(bs.count, epochs[0].count)
                for epoch in epochs { XCTAssertEqual(Array(bs), epoch) }
                checked += 1
                continue
            default:
                continue
            }
            torch.manualSeed(UInt64(c["seed"] as! Int))
            let epochs = c["epochs"] as! [[Int]]
            XCTAssertEqual(sampler.count, epochs[0].count, "\(kind)")
            for epoch in epochs { XCTAssertEqual(Array(sampler), epoch, "\(kind) \(c)") }
            assertClose(torch.rand(3, dtype: .float64), c["after"] as! [Double], atol: 1e-12, rtol: 0)
            checked += 1
        }
        XCTAssertEqual(checked, 13)
    }

    func testMultinomialMatchesPyTorch() throws {
        for c in try loadFixtureCases("data") where c["kind"] as? String == "multinomial" {
            let g = Generator().manualSeed(UInt64(c["generatorSeed"] as! Int))
            let out = torch.multinomial(fixtureTensor(c["input"]!), c["numSamples"] as! Int,
                                        replacement: c["replacement"] as! Bool, generator: g)
            let want = fixtureTensor(c["result"]!)
            XCTAssertEqual(out.shape, want.shape)
            XCTAssertEqual(out.dtype, .int64)
            XCTAssertEqual(out.toArray(as: Int.self), want.toArray(as: Int.self))
        }
        XCTAssertEqual(torch.multinomialError(shape: [3], dtype: .float32, numSamples: 4, replacement: false),
                       "cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        XCTAssertEqual(torch.multinomialError(shape: [2, 2, 2], dtype: .float32, numSamples: 1, replacement: true),
                       "prob_dist must be 1 or 2 dim")
        XCTAssertNil(torch.multinomialError(shape: [3], dtype: .float64, numSamples: 9, replacement: true))
    }

    func testRandomSplitMatchesPyTorch() throws {
        for c in try loadFixtureCases("data") where c["kind"] as? String == "randomSplit" {
            let n = c["n"] as! Int
            torch.manualSeed(UInt64(c["seed"] as! Int))
            let g = generator(c["generatorSeed"])
            let parts: [utils.data.Subset<Range<Int>>]
            if c["fractional"] as! Bool {
                parts = utils.data.randomSplit(0..<n, lengths: c["lengths"] as! [Double], generator: g)
            } else {
                parts = utils.data.randomSplit(0..<n, c["lengths"] as! [Int], generator: g)
            }
            XCTAssertEqual(parts.map { $0.indices }, c["parts"] as! [[Int]])
            XCTAssertEqual(parts.map { part in (0..<part.count).map { part[$0] } }, c["parts"] as! [[Int]])
            assertClose(torch.rand(3, dtype: .float64), c["after"] as! [Double], atol: 1e-12, rtol: 0)
        }
    }

    func testRandomSplitSizes() {
        func sizes(_ n: Int, _ f: [Double]) -> [Int]? { try? utils.data.randomSplitLengths(datasetCount: n, fractions: f).get() }
        XCTAssertEqual(sizes(10, [0.8, 0.2]), [8, 2])
        XCTAssertEqual(sizes(11, [0.5, 0.3, 0.2]), [6, 3, 2])
        XCTAssertEqual(sizes(7, [1.0 / 3, 1.0 / 3, 1.0 / 3]), [3, 2, 2])
        XCTAssertEqual(sizes(5, [0, 1]), [0, 5])
        XCTAssertEqual(sizes(10, [3, 7]), [3, 7])
        XCTAssertEqual(utils.data.randomSplitLengths(datasetCount: 10, fractions: [0.5, 0.6]),
                       .failure(.init(message: "Sum of input lengths does not equal the length of the input dataset!")))
        XCTAssertEqual(utils.data.randomSplitLengths(datasetCount: 10, fractions: [1.5, -0.5]),
                       .failure(.init(message: "Fraction at index 0 is not between 0 and 1")))
        XCTAssertEqual(utils.data.randomSplitError(datasetCount: 10, lengths: [3, 6]),
                       "Sum of input lengths does not equal the length of the input dataset!")
        XCTAssertNil(utils.data.randomSplitError(datasetCount: 10, lengths: [3, 7]))
        let parts = utils.data.randomSplit(ds(10), [0.3, 0.7], generator: Generator().manualSeed(1))
        XCTAssertEqual(parts.map { $0.count }, [3, 7])
        XCTAssertEqual(Set(parts.flatMap { $0.indices }), Set(0..<10))
        let (x, y) = parts[0][0]
        XCTAssertEqual(x.item() / 10, y.item())
    }

    // MARK: - Samplers

    func testSamplersInLoader() {
        let d = ds(6)
        XCTAssertEqual(Array(utils.data.SequentialSampler(d)), [0, 1, 2, 3, 4, 5])
        XCTAssertEqual(labels(DataLoader(d, batchSize: 2, sampler: [5, 3, 1])), [[5, 3], [1]])
        XCTAssertEqual(labels(DataLoader(d, batchSampler: [[0, 5], [2], [1, 3, 4]])), [[0, 5], [2], [1, 3, 4]])
        let bs = utils.data.BatchSampler(utils.data.SequentialSampler(d), batchSize: 4, dropLast: false)
        XCTAssertEqual(DataLoader(d, batchSampler: bs).count, 2)
        XCTAssertEqual(labels(DataLoader(d, batchSampler: bs)), [[0, 1, 2, 3], [4, 5]])
        let sub = utils.data.SubsetRandomSampler([1, 3, 5], generator: Generator().manualSeed(3))
        XCTAssertEqual(labels(DataLoader(d, batchSize: 3, sampler: sub)).flatMap { $0 }.sorted(), [1, 3, 5])
        let weighted = utils.data.WeightedRandomSampler([0, 0, 1, 0, 0, 0], 5)
        XCTAssertEqual(Array(weighted), [2, 2, 2, 2, 2])
        let withReplacement = utils.data.RandomSampler(d, replacement: true, numSamples: 100, generator: Generator().manualSeed(0))
        let draws = Array(withReplacement)
        XCTAssertEqual(draws.count, 100)
        XCTAssertTrue(draws.allSatisfy { (0..<6).contains($0) })
        // Explicit generators make iterations reproducible.
        let a = labels(DataLoader(d, batchSize: 2, shuffle: true, generator: Generator().manualSeed(9)))
        let b = labels(DataLoader(d, batchSize: 2, shuffle: true, generator: Generator().manualSeed(9)))
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.flatMap { $0 }.sorted(), Array(0..<6))
    }

    func testArgumentErrors() {
        typealias DL = DataLoader<Tensor>
        func err(batchSize: Int = 1, shuffle: Bool = false, sampler: Bool = false, batchSampler: Bool = false,
                 workers: Int = 0, dropLast: Bool = false, prefetch: Int? = nil) -> String? {
            DL.argumentError(batchSize: batchSize, shuffle: shuffle, hasSampler: sampler, hasBatchSampler: batchSampler,
                             numWorkers: workers, dropLast: dropLast, prefetchFactor: prefetch)
        }
        XCTAssertNil(err())
        XCTAssertNil(err(batchSize: 4, shuffle: true, workers: 2, dropLast: true, prefetch: 3))
        XCTAssertEqual(err(shuffle: true, sampler: true), "sampler option is mutually exclusive with shuffle")
        XCTAssertEqual(err(batchSize: 2, batchSampler: true),
                       "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
        XCTAssertEqual(err(batchSampler: true, dropLast: true),
                       "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
        XCTAssertEqual(err(workers: -1), "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        XCTAssertEqual(err(batchSize: 0), "batch_size should be a positive integer value, but got batch_size=0")
        XCTAssertNotNil(err(prefetch: 2))
    }

    // MARK: - Workers

    func testWorkersPreserveOrder() {
        let d = SlowDataset(n: 37)
        for workers in [1, 3] {
            let g0 = Generator().manualSeed(5), g1 = Generator().manualSeed(5)
            let serial = DataLoader(d, batchSize: 4, shuffle: true, generator: g0)
            let parallel = DataLoader(d, batchSize: 4, shuffle: true, numWorkers: workers, generator: g1)
            for _ in 0..<2 {
                let a = serial.map { $0.1.toArray(as: Int.self) }
                let batches = Array(parallel)
                let b = batches.map { $0.1.toArray(as: Int.self) }
                XCTAssertEqual(a, b)
                XCTAssertEqual(b.count, 10)
                XCTAssertEqual(batches[0].0.shape, [4, 2])
                for (x, y) in batches { XCTAssertEqual(x.select(1, 0).toArray(as: Int.self), y.toArray(as: Int.self)) }
            }
            XCTAssertEqual(g0.random(), g1.random(), "generators advance alike")
        }
        // Abandoning an iteration part-way releases the workers.
        let dl = DataLoader(d, batchSize: 2, numWorkers: 2, prefetchFactor: 1)
        for (k, (_, y)) in dl.enumerated() {
            XCTAssertEqual(y.toArray(as: Int.self), [2 * k, 2 * k + 1])
            if k == 2 { break }
        }
        XCTAssertEqual(dl.map { $0.1.toArray(as: Int.self) }.flatMap { $0 }, Array(0..<37))
    }

    func testWorkersDrawFromTheirOwnSeededGenerators() {
        // PyTorch 2.15: a dataset whose __getitem__ returns torch.randint(0, 1000, (1,)).item() * 100 + i,
        // torch.manual_seed(0), DataLoader(ds, batch_size=2, shuffle=True, num_workers=2), two epochs; then
        // num_workers=0 after torch.manual_seed(0) again. Worker k is seeded base_seed + k and makes batches k, k+2, ...
        final class RandomItems: Dataset {
            var count: Int { 10 }
            subscript(i: Int) -> Int { torch.randint(0, 1000, [1]).item(as: Int.self) * 100 + i }
        }
        torch.manualSeed(0)
        let workers = DataLoader(RandomItems(), batchSize: 2, shuffle: true, numWorkers: 2)
        XCTAssertEqual(workers.map { $0.toArray(as: Int.self) },
                       [[90606, 1007], [72401, 204], [80402, 1300], [72409, 61308], [36903, 3505]])
        XCTAssertEqual(workers.map { $0.toArray(as: Int.self) },
                       [[2302, 82904], [92607, 25500], [4108, 29709], [22305, 80403], [79706, 8601]])
        torch.manualSeed(0)
        XCTAssertEqual(DataLoader(RandomItems(), batchSize: 2, shuffle: true).map { $0.toArray(as: Int.self) },
                       [[96306, 37907], [42701, 50304], [49702, 68300], [10109, 86608], [75603, 39905]])
        // The thread's own generator is only in effect inside the closure.
        let g = Generator().manualSeed(7)
        let inside = torch.withThreadDefaultGenerator(g) { torch.rand(2).toArray(as: Float.self) }
        XCTAssertEqual(inside, torch.rand(2, generator: Generator().manualSeed(7)).toArray(as: Float.self))
        XCTAssertTrue(torch.defaultGenerator !== g)
    }

    // MARK: - Collation

    func testDefaultCollateMatchesPyTorch() throws {
        let c = try loadFixtureCases("data").first { $0["kind"] as? String == "collate" }!
        let want = (c["values"] as! [Any]).map { fixtureTensor($0) }
        let (a, b, flag, t) = utils.data.defaultCollate([(1, 2.5, true, torch.tensor([1, 2])), (3, 4.5, false, torch.tensor([3, 4]))])
        for (got, w) in zip([a, b, flag, t], want) {
            XCTAssertEqual(got.dtype, w.dtype)
            XCTAssertEqual(got.shape, w.shape)
            assertClose(got, w, atol: 0, rtol: 0)
        }
        XCTAssertEqual(Float.collate([1, 2]).dtype, .float32)
        XCTAssertEqual(Int32.collate([1, 2]).dtype, .int32)
        XCTAssertEqual(String.collate(["a", "b"]), ["a", "b"])
        let lists = utils.data.defaultCollate([[1, 2, 3], [4, 5, 6]])
        XCTAssertEqual(lists.map { $0.toArray(as: Int.self) }, [[1, 4], [2, 5], [3, 6]])
        let dicts = utils.data.defaultCollate([["x": 1.0, "y": 2.0], ["x": 3.0, "y": 4.0]])
        XCTAssertEqual(dicts["x"]!.toArray(as: Double.self), [1, 3])
        // stacking converts layouts and promotes dtypes like torch.stack
        let base = torch.arange(6).view(2, 3)
        let stacked = Tensor.collate([base.t(), base.t().contiguous(), torch.zeros(3, 2, dtype: .int32)])
        XCTAssertEqual(stacked.shape, [3, 3, 2])
        XCTAssertEqual(stacked.dtype, .int64)
        XCTAssertEqual(stacked.toArray(as: Int.self), [0, 3, 1, 4, 2, 5, 0, 3, 1, 4, 2, 5, 0, 0, 0, 0, 0, 0])
        // and records autograd
        let w = torch.ones(2, requiresGrad: true), v = torch.ones(2, requiresGrad: true)
        let s = Tensor.collate([w * 2, v * 3])
        XCTAssertEqual(s.gradFn?.name, "StackBackward0")
        s.sum().backward()
        assertClose(w.grad!, [2, 2])
        assertClose(v.grad!, [3, 3])
    }

    func testCustomCollate() {
        let d = ds(5)
        let sums = DataLoader(d, batchSize: 2, collateFn: { samples in samples.map { $0.1.item(as: Int.self) }.reduce(0, +) })
        XCTAssertEqual(Array(sums), [1, 5, 4])
        let pairs = DataLoader(d, batchSize: 3, collate: { samples in (samples.count, torch.stack(samples.map { $0.0 })) })
        let out = Array(pairs)
        XCTAssertEqual(out.map { $0.0 }, [3, 2])
        XCTAssertEqual(out[1].1.shape, [2, 1])
        let shuffled = DataLoader(d, batchSize: 5, shuffle: true, collateFn: { $0.map { $0.1.item(as: Int.self) } },
                                  generator: Generator().manualSeed(0))
        XCTAssertEqual(Array(shuffled)[0].sorted(), [0, 1, 2, 3, 4])
    }

    // MARK: - Dataset combinators

    func testSubsetAndConcat() {
        let a = ds(3), b = TensorDataset(torch.full([2, 1], -1), torch.tensor([100, 101]))
        let sub = utils.data.Subset(a, [2, 0])
        XCTAssertEqual(sub.count, 2)
        XCTAssertEqual(sub[0].1.item(), 2)
        let cat = utils.data.ConcatDataset([a, b, sub])
        XCTAssertEqual(cat.count, 7)
        XCTAssertEqual(cat.cumulativeSizes, [3, 5, 7])
        XCTAssertEqual((0..<7).map { cat[$0].1.item(as: Int.self) }, [0, 1, 2, 100, 101, 2, 0])
        XCTAssertEqual(cat[-1].1.item(), 0)
        XCTAssertEqual(cat[-7].1.item(), 0)
        XCTAssertEqual(labels(DataLoader(cat, batchSize: 4)), [[0, 1, 2, 100], [101, 2, 0]])
        XCTAssertEqual(Array(utils.data.RandomSampler(cat, generator: Generator().manualSeed(1))).sorted(), Array(0..<7))
    }
}

