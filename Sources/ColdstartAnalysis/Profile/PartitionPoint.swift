extension RandomAccessCollection {
    /// The first index whose element is not `isBefore`, in a collection
    /// partitioned by it (every element for which it holds comes first):
    /// the one binary search behind every "first at or after" look-up of
    /// sorted times, segments, phases and symbols.
    func partitionPoint(where isBefore: (Element) throws -> Bool) rethrows -> Index {
        var low = startIndex, remaining = count
        while remaining > 0 {
            let half = remaining / 2
            let middle = index(low, offsetBy: half)
            if try isBefore(self[middle]) {
                low = index(after: middle)
                remaining -= half + 1
            } else {
                remaining = half
            }
        }
        return low
    }
}
