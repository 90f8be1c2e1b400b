// The system modules every part of SwiftTorch uses, imported once for the whole module and re-exported to code that
// imports Torch. FoundationEssentials (not Foundation) keeps ICU's 40 MB of locale data out of static binaries; where
// the toolchain has no FoundationEssentials (older Swift, Darwin), full Foundation stands in.
#if canImport(FoundationEssentials)
@_exported import FoundationEssentials
#else
@_exported import Foundation
#endif
#if canImport(Glibc)
@_exported import Glibc
#elseif canImport(Musl)
@_exported import Musl
#elseif canImport(Darwin)
@_exported import Darwin
#endif
