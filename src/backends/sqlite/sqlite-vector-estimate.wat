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
        (br $block)))))
