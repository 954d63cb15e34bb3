;; The quantised pass's estimate over the IVF lists' codes (sqlite-vector-estimate.ts), sixteen codes
;; at a time with 128-bit SIMD. `npm run build:wasm` turns this file into sqlite-vector-estimate.wasm.ts.
;;
;; Codes are held in blocks of 16 members: byte b of the block's 16 codes are 16 consecutive bytes
;; at block + 16 b. The lookup table holds, for every 4-bit half of a code byte (low half first),
;; 16 unsigned bytes: the query's sum over the dimensions whose bit is set in that nibble value,
;; quantised (see queryTable). One swizzle looks up one nibble of 16 codes at once.
(module
  (memory (export "memory") 1)
  ;; For the `blocks` blocks of codes from byte $codes on (`bytes` bytes per code) and their
  ;; alphas from byte $alpha on: out[n] = alpha[n] * (2 * (sum[n] * scale + base) - qsum), all in
  ;; float32, sum[n] being the integer sum of member n's 2 * bytes nibble lookups.
  (func (export "estimate")
    (param $lut i32) (param $codes i32) (param $alpha i32) (param $blocks i32) (param $bytes i32)
    (param $scale f32) (param $base f32) (param $qsum f32) (param $out i32)
    (local $end i32) (local $l i32) (local $lend i32) (local $v v128) (local $s v128)
    (local $acc0 v128) (local $acc1 v128) (local $vscale v128) (local $vbase v128) (local $vqsum v128)
    (local.set $vscale (f32x4.splat (local.get $scale)))
    (local.set $vbase (f32x4.splat (local.get $base)))
    (local.set $vqsum (f32x4.splat (local.get $qsum)))
    (local.set $lend (i32.add (local.get $lut) (i32.shl (local.get $bytes) (i32.const 5))))
    (local.set $end (i32.add (local.get $alpha) (i32.shl (local.get $blocks) (i32.const 6))))
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $alpha) (local.get $end)))
        (local.set $acc0 (v128.const i32x4 0 0 0 0))
        (local.set $acc1 (v128.const i32x4 0 0 0 0))
        (local.set $l (local.get $lut))
        (loop $byte
          (local.set $v (v128.load (local.get $codes)))
          ;; Both halves' lookups: at most 2 * 127, so their u8 sum does not wrap.
          (local.set $s
            (i8x16.add
              (i8x16.swizzle (v128.load (local.get $l)) (v128.and (local.get $v) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
              (i8x16.swizzle (v128.load offset=16 (local.get $l)) (i8x16.shr_u (local.get $v) (i32.const 4)))))
          (local.set $acc0 (i16x8.add (local.get $acc0) (i16x8.extend_low_i8x16_u (local.get $s))))
          (local.set $acc1 (i16x8.add (local.get $acc1) (i16x8.extend_high_i8x16_u (local.get $s))))
          (local.set $codes (i32.add (local.get $codes) (i32.const 16)))
          (local.set $l (i32.add (local.get $l) (i32.const 32)))
          (br_if $byte (i32.lt_u (local.get $l) (local.get $lend))))
        ;; Members 0-3, 4-7 (acc0), 8-11, 12-15 (acc1) of the block.
        (v128.store (local.get $out)
          (f32x4.mul (v128.load (local.get $alpha))
            (f32x4.sub
              (f32x4.mul (f32x4.splat (f32.const 2))
                (f32x4.add (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $acc0))) (local.get $vscale)) (local.get $vbase)))
              (local.get $vqsum))))
        (v128.store offset=16 (local.get $out)
          (f32x4.mul (v128.load offset=16 (local.get $alpha))
            (f32x4.sub
              (f32x4.mul (f32x4.splat (f32.const 2))
                (f32x4.add (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $acc0))) (local.get $vscale)) (local.get $vbase)))
              (local.get $vqsum))))
        (v128.store offset=32 (local.get $out)
          (f32x4.mul (v128.load offset=32 (local.get $alpha))
            (f32x4.sub
              (f32x4.mul (f32x4.splat (f32.const 2))
                (f32x4.add (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $acc1))) (local.get $vscale)) (local.get $vbase)))
              (local.get $vqsum))))
        (v128.store offset=48 (local.get $out)
          (f32x4.mul (v128.load offset=48 (local.get $alpha))
            (f32x4.sub
              (f32x4.mul (f32x4.splat (f32.const 2))
                (f32x4.add (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $acc1))) (local.get $vscale)) (local.get $vbase)))
              (local.get $vqsum))))
        (local.set $out (i32.add (local.get $out) (i32.const 64)))
        (local.set $alpha (i32.add (local.get $alpha) (i32.const 64)))
        (br $block))))
  ;; The IVF centroids' scores (sqlite-vector-cache.ts): out[c] = the dot product of the query at
  ;; $q with the `count` vectors of `dims` float32 (a multiple of 4) from byte $data on, four
  ;; vectors per pass. Lane l of a vector's accumulator sums q[j] * v[j] for j = l mod 4 in
  ;; order, in float32; then (lane 0 + lane 1) + (lane 2 + lane 3). `dotsF32` in
  ;; sqlite-vector-estimate.ts computes the same float32, step by step.
  (func (export "dots")
    (param $q i32) (param $data i32) (param $count i32) (param $dims i32) (param $out i32)
    (local $stride i32) (local $qend i32) (local $end i32) (local $j i32) (local $p i32) (local $x v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local.set $stride (i32.shl (local.get $dims) (i32.const 2)))
    (local.set $qend (i32.add (local.get $q) (local.get $stride)))
    ;; Whole groups of four vectors, then one at a time.
    (local.set $end (i32.add (local.get $out) (i32.shl (i32.and (local.get $count) (i32.const -4)) (i32.const 2))))
    (block $fours
      (loop $four
        (br_if $fours (i32.ge_u (local.get $out) (local.get $end)))
        (local.set $a0 (v128.const i32x4 0 0 0 0))
        (local.set $a1 (v128.const i32x4 0 0 0 0))
        (local.set $a2 (v128.const i32x4 0 0 0 0))
        (local.set $a3 (v128.const i32x4 0 0 0 0))
        (local.set $j (local.get $q))
        (local.set $p (local.get $data))
        (loop $dim
          (local.set $x (v128.load (local.get $j)))
          (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $x) (v128.load (local.get $p)))))
          (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $x) (v128.load (i32.add (local.get $p) (local.get $stride))))))
          (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $x) (v128.load (i32.add (local.get $p) (i32.shl (local.get $stride) (i32.const 1)))))))
          (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $x) (v128.load (i32.add (local.get $p) (i32.mul (local.get $stride) (i32.const 3)))))))
          (local.set $p (i32.add (local.get $p) (i32.const 16)))
          (local.set $j (i32.add (local.get $j) (i32.const 16)))
          (br_if $dim (i32.lt_u (local.get $j) (local.get $qend))))
        (f32.store (local.get $out) (call $sum (local.get $a0)))
        (f32.store offset=4 (local.get $out) (call $sum (local.get $a1)))
        (f32.store offset=8 (local.get $out) (call $sum (local.get $a2)))
        (f32.store offset=12 (local.get $out) (call $sum (local.get $a3)))
        (local.set $data (i32.add (local.get $data) (i32.shl (local.get $stride) (i32.const 2))))
        (local.set $out (i32.add (local.get $out) (i32.const 16)))
        (br $four)))
    (local.set $end (i32.add (local.get $end) (i32.shl (i32.and (local.get $count) (i32.const 3)) (i32.const 2))))
    (block $ones
      (loop $one
        (br_if $ones (i32.ge_u (local.get $out) (local.get $end)))
        (local.set $a0 (v128.const i32x4 0 0 0 0))
        (local.set $j (local.get $q))
        (loop $dim1
          (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (v128.load (local.get $j)) (v128.load (local.get $data)))))
          (local.set $data (i32.add (local.get $data) (i32.const 16)))
          (local.set $j (i32.add (local.get $j) (i32.const 16)))
          (br_if $dim1 (i32.lt_u (local.get $j) (local.get $qend))))
        (f32.store (local.get $out) (call $sum (local.get $a0)))
        (local.set $out (i32.add (local.get $out) (i32.const 4)))
        (br $one))))
;; The candidates to re-rank: about the k best estimates (never fewer than k when there are
  ;; that many that are not NaN; a NaN is never chosen) among est[from, to) for the `nruns`
  ;; (from, to) pairs of i32 at $runs, as element indexes from byte $est on. The histogram
  ;; threshold of bestIndexes (sqlite-vector-cache.ts) in the same float32 arithmetic, four
  ;; estimates at a time: lo and hi; bucket(s) = min(BUCKETS, trunc((s - lo) * per)) with
  ;; per = BUCKETS / (hi - lo) (0 when hi = lo); the least cut whose buckets from cut up hold k;
  ;; then every s with trunc((s - lo) * per) >= cut. Writes their indexes at $out, run by run in
  ;; order, and returns how many. $counts: BUCKETS + 1 u32 of scratch. (A NaN lane truncates to
  ;; bucket 0, which only decides a cut of 0, when everything is chosen anyway.)
  (func (export "select")
    (param $runs i32) (param $nruns i32) (param $est i32) (param $k i32) (param $counts i32) (param $out i32) (result i32)
    (local $rend i32) (local $r i32) (local $p i32) (local $end i32) (local $s f32) (local $v v128)
    (local $lo f32) (local $hi f32) (local $per f32) (local $vlo v128) (local $vhi v128) (local $vper v128) (local $b v128)
    (local $i i32) (local $bits i32) (local $cut i32) (local $seen i32) (local $o i32) (local $vcut v128)
    (local.set $rend (i32.add (local.get $runs) (i32.shl (local.get $nruns) (i32.const 3))))
    ;; lo and hi (NaN skipped: a comparison with it is false).
    (local.set $vlo (f32x4.splat (f32.const inf)))
    (local.set $vhi (f32x4.splat (f32.const -inf)))
    (local.set $lo (f32.const inf))
    (local.set $hi (f32.const -inf))
    (local.set $r (local.get $runs))
    (block $done1
      (loop $run1
        (br_if $done1 (i32.ge_u (local.get $r) (local.get $rend)))
        (local.set $p (i32.add (local.get $est) (i32.shl (i32.load (local.get $r)) (i32.const 2))))
        (local.set $end (i32.add (local.get $est) (i32.shl (i32.load offset=4 (local.get $r)) (i32.const 2))))
        (block $fours1
          (loop $four1
            (br_if $fours1 (i32.gt_u (i32.add (local.get $p) (i32.const 16)) (local.get $end)))
            (local.set $v (v128.load (local.get $p)))
            (local.set $vlo (f32x4.pmin (local.get $vlo) (local.get $v)))
            (local.set $vhi (f32x4.pmax (local.get $vhi) (local.get $v)))
            (local.set $p (i32.add (local.get $p) (i32.const 16)))
            (br $four1)))
        (block $ones1
          (loop $one1
            (br_if $ones1 (i32.ge_u (local.get $p) (local.get $end)))
            (local.set $s (f32.load (local.get $p)))
            (if (f32.lt (local.get $s) (local.get $lo)) (then (local.set $lo (local.get $s))))
            (if (f32.gt (local.get $s) (local.get $hi)) (then (local.set $hi (local.get $s))))
            (local.set $p (i32.add (local.get $p) (i32.const 4)))
            (br $one1)))
        (local.set $r (i32.add (local.get $r) (i32.const 8)))
        (br $run1)))
    (local.set $lo (call $least (local.get $lo) (f32x4.extract_lane 0 (local.get $vlo))))
    (local.set $lo (call $least (local.get $lo) (f32x4.extract_lane 1 (local.get $vlo))))
    (local.set $lo (call $least (local.get $lo) (f32x4.extract_lane 2 (local.get $vlo))))
    (local.set $lo (call $least (local.get $lo) (f32x4.extract_lane 3 (local.get $vlo))))
    (local.set $hi (call $most (local.get $hi) (f32x4.extract_lane 0 (local.get $vhi))))
    (local.set $hi (call $most (local.get $hi) (f32x4.extract_lane 1 (local.get $vhi))))
    (local.set $hi (call $most (local.get $hi) (f32x4.extract_lane 2 (local.get $vhi))))
    (local.set $hi (call $most (local.get $hi) (f32x4.extract_lane 3 (local.get $vhi))))
    (local.set $per (if (result f32) (f32.gt (local.get $hi) (local.get $lo))
      (then (f32.div (f32.const 2048) (f32.sub (local.get $hi) (local.get $lo))))
      (else (f32.const 0))))
    (local.set $vlo (f32x4.splat (local.get $lo)))
    (local.set $vper (f32x4.splat (local.get $per)))
    ;; The histogram.
    (memory.fill (local.get $counts) (i32.const 0) (i32.const 8196))
    (local.set $r (local.get $runs))
    (block $done2
      (loop $run2
        (br_if $done2 (i32.ge_u (local.get $r) (local.get $rend)))
        (local.set $p (i32.add (local.get $est) (i32.shl (i32.load (local.get $r)) (i32.const 2))))
        (local.set $end (i32.add (local.get $est) (i32.shl (i32.load offset=4 (local.get $r)) (i32.const 2))))
        (block $fours2
          (loop $four2
            (br_if $fours2 (i32.gt_u (i32.add (local.get $p) (i32.const 16)) (local.get $end)))
            (local.set $b
              (i32x4.shl
                (i32x4.min_s
                  (i32x4.trunc_sat_f32x4_s (f32x4.mul (f32x4.sub (v128.load (local.get $p)) (local.get $vlo)) (local.get $vper)))
                  (v128.const i32x4 2048 2048 2048 2048))
                (i32.const 2)))
            (call $count (i32.add (local.get $counts) (i32x4.extract_lane 0 (local.get $b))))
            (call $count (i32.add (local.get $counts) (i32x4.extract_lane 1 (local.get $b))))
            (call $count (i32.add (local.get $counts) (i32x4.extract_lane 2 (local.get $b))))
            (call $count (i32.add (local.get $counts) (i32x4.extract_lane 3 (local.get $b))))
            (local.set $p (i32.add (local.get $p) (i32.const 16)))
            (br $four2)))
        (block $ones2
          (loop $one2
            (br_if $ones2 (i32.ge_u (local.get $p) (local.get $end)))
            (local.set $i (i32.trunc_sat_f32_s (f32.mul (f32.sub (f32.load (local.get $p)) (local.get $lo)) (local.get $per))))
            (if (i32.gt_s (local.get $i) (i32.const 2048)) (then (local.set $i (i32.const 2048))))
            (call $count (i32.add (local.get $counts) (i32.shl (local.get $i) (i32.const 2))))
            (local.set $p (i32.add (local.get $p) (i32.const 4)))
            (br $one2)))
        (local.set $r (i32.add (local.get $r) (i32.const 8)))
        (br $run2)))
    ;; The cut.
    (local.set $cut (i32.const 2048))
    (local.set $seen (i32.load offset=8192 (local.get $counts)))
    (block $found
      (loop $down
        (br_if $found (i32.or (i32.le_s (local.get $cut) (i32.const 0)) (i32.ge_u (local.get $seen) (local.get $k))))
        (local.set $cut (i32.sub (local.get $cut) (i32.const 1)))
        (local.set $seen (i32.add (local.get $seen) (i32.load (i32.add (local.get $counts) (i32.shl (local.get $cut) (i32.const 2))))))
        (br $down)))
    (local.set $vcut (i32x4.splat (local.get $cut)))
    ;; The chosen.
    (local.set $o (local.get $out))
    (local.set $r (local.get $runs))
    (block $done3
      (loop $run3
        (br_if $done3 (i32.ge_u (local.get $r) (local.get $rend)))
        (local.set $i (i32.load (local.get $r)))
        (local.set $p (i32.add (local.get $est) (i32.shl (local.get $i) (i32.const 2))))
        (local.set $end (i32.add (local.get $est) (i32.shl (i32.load offset=4 (local.get $r)) (i32.const 2))))
        (block $fours3
          (loop $four3
            (br_if $fours3 (i32.gt_u (i32.add (local.get $p) (i32.const 16)) (local.get $end)))
            (local.set $v (v128.load (local.get $p)))
            (local.set $bits
              (i32x4.bitmask
                (v128.and
                  (f32x4.eq (local.get $v) (local.get $v))
                  (i32x4.ge_s (i32x4.trunc_sat_f32x4_s (f32x4.mul (f32x4.sub (local.get $v) (local.get $vlo)) (local.get $vper))) (local.get $vcut)))))
            (if (local.get $bits)
              (then
                (if (i32.and (local.get $bits) (i32.const 1)) (then (i32.store (local.get $o) (local.get $i)) (local.set $o (i32.add (local.get $o) (i32.const 4)))))
                (if (i32.and (local.get $bits) (i32.const 2)) (then (i32.store (local.get $o) (i32.add (local.get $i) (i32.const 1))) (local.set $o (i32.add (local.get $o) (i32.const 4)))))
                (if (i32.and (local.get $bits) (i32.const 4)) (then (i32.store (local.get $o) (i32.add (local.get $i) (i32.const 2))) (local.set $o (i32.add (local.get $o) (i32.const 4)))))
                (if (i32.and (local.get $bits) (i32.const 8)) (then (i32.store (local.get $o) (i32.add (local.get $i) (i32.const 3))) (local.set $o (i32.add (local.get $o) (i32.const 4)))))))
            (local.set $i (i32.add (local.get $i) (i32.const 4)))
            (local.set $p (i32.add (local.get $p) (i32.const 16)))
            (br $four3)))
        (block $ones3
          (loop $one3
            (br_if $ones3 (i32.ge_u (local.get $p) (local.get $end)))
            (local.set $s (f32.load (local.get $p)))
            (if (i32.and (f32.eq (local.get $s) (local.get $s))
                  (i32.ge_s (i32.trunc_sat_f32_s (f32.mul (f32.sub (local.get $s) (local.get $lo)) (local.get $per))) (local.get $cut)))
              (then (i32.store (local.get $o) (local.get $i)) (local.set $o (i32.add (local.get $o) (i32.const 4)))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (local.set $p (i32.add (local.get $p) (i32.const 4)))
            (br $one3)))
        (local.set $r (i32.add (local.get $r) (i32.const 8)))
        (br $run3)))
    (i32.shr_u (i32.sub (local.get $o) (local.get $out)) (i32.const 2)))
  ;; One more in the histogram bucket at $at.
  (func $count (param $at i32)
    (i32.store (local.get $at) (i32.add (i32.load (local.get $at)) (i32.const 1))))
  ;; The lesser and the greater of a and b, b ignored when NaN (pmin and pmax's rule).
  (func $least (param $a f32) (param $b f32) (result f32)
    (if (result f32) (f32.lt (local.get $b) (local.get $a)) (then (local.get $b)) (else (local.get $a))))
  (func $most (param $a f32) (param $b f32) (result f32)
    (if (result f32) (f32.gt (local.get $b) (local.get $a)) (then (local.get $b)) (else (local.get $a))))
  ;; (lane 0 + lane 1) + (lane 2 + lane 3), in float32.
  (func $sum (param $v v128) (result f32)
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 1 (local.get $v)))
      (f32.add (f32x4.extract_lane 2 (local.get $v)) (f32x4.extract_lane 3 (local.get $v))))))
