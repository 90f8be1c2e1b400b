import XCTest
@testable import Torch

/// `utils.data.DistributedSampler` against PyTorch's index lists (Tests/Fixtures/distributed.json,
/// written by scripts/fixtures_distributed.py).
final class DistributedSamplerTests: XCTestCase {
    private struct Sized: Dataset {
        let count: Int
        subscript(index: Int) -> Int { index }
    }

    func testIndexListsMatchPyTorch() throws {
        let cases = try loadFixtureCases("distributed")
        XCTAssertGreaterThan(cases.count, 300)
        for c in cases {
            let n = c["n"] as! Int, replicas = c["num_replicas"] as! Int
            let shuffle = c["shuffle"] as! Bool, dropLast = c["drop_last"] as! Bool
            let seed = UInt64(c["seed"] as! Int), epoch = c["epoch"] as! Int
            let expected = c["indices"] as! [[Int]]
            for rank in 0..<replicas {
                let s = DistributedSampler(Sized(count: n), numReplicas: replicas, rank: rank, shuffle: shuffle,
                                           seed: seed, dropLast: dropLast)
                s.setEpoch(epoch)
                XCTAssertEqual(Array(s), expected[rank], "n \(n) replicas \(replicas) rank \(rank) shuffle \(shuffle) dropLast \(dropLast) seed \(seed) epoch \(epoch)")
                XCTAssertEqual(s.count, expected[rank].count)
            }
        }
    }

    func testRanksPartitionTheDataAndEpochsReshuffle() {
        let ds = Sized(count: 10)
        let parts = (0..<3).map { Array(DistributedSampler(ds, numReplicas: 3, rank: $0, seed: 7)) }
        XCTAssertEqual(parts.map(\.count), [4, 4, 4])                  // padded to 12
        XCTAssertEqual(Set(parts.flatMap { $0 }), Set(0..<10))
        let s = DistributedSampler(ds, numReplicas: 3, rank: 0, seed: 7)
        let e0 = Array(s)
        s.setEpoch(1)
        XCTAssertNotEqual(Array(s), e0)
        s.setEpoch(0)
        XCTAssertEqual(Array(s), e0)                                   // deterministic per epoch
    }

    func testSetEpochReachesTheDataLoadersSampler() {
        let x = torch.arange(8).float().unsqueeze(1)
        let ds = TensorDataset(x, x)
        let s = DistributedSampler(ds, numReplicas: 2, rank: 1, seed: 3)
        let dl = DataLoader(ds, batchSize: 2, sampler: s)
        func epochOrder() -> [Int] { dl.flatMap { $0.0.flatten().toArray(as: Float.self).map { Int($0) } } }
        s.setEpoch(0)
        let a = epochOrder()
        s.setEpoch(5)
        let b = epochOrder()
        XCTAssertEqual(a, Array(s.setEpochReturning(0)))
        XCTAssertEqual(b, Array(s.setEpochReturning(5)))
        XCTAssertNotEqual(a, b)
    }
}

private extension DistributedSampler {
    func setEpochReturning(_ e: Int) -> [Int] { setEpoch(e); return indices() }
}
