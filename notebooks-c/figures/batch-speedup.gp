set terminal pngcairo size 720,420 font 'sans,10'
set output 'batch-speedup.png'
set title 'Qwen3.8-27B, MTP k = 3, alpha = 0.8, 4096 positions: roofline model, nominal H200'
set logscale x 2
set xlabel 'batch size (sequences)'
set ylabel 'speed-up over plain decoding'
set grid
set key bottom left
set yrange [0:*]
set arrow from 94, graph 0 to 94, graph 1 nohead dt 3
set label 'speculative batch full' at 94, graph 0.9 right offset -0.5,0
set xrange [1:128]
plot 'batch-speedup.dat' using 1:2 with linespoints lw 2 pt 7 title 'nominal FLOP/s', \
     '' using 1:3 with linespoints lw 2 pt 5 title 'a third of nominal', \
     1 with lines dt 2 lc rgb 'gray' notitle
