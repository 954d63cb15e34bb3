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
  ;; (lane 0 + lane 1) + (lane 2 + lane 3), in float32.
  (func $sum (param $v v128) (result f32)
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 1 (local.get $v)))
      (f32.add (f32x4.extract_lane 2 (local.get $v)) (f32x4.extract_lane 3 (local.get $v))))))
