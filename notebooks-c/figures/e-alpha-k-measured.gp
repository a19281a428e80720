set terminal pngcairo size 720,440 font 'sans,10'
set output 'e-alpha-k-measured.png'
set title 'Draft model on the embedded Shakespeare target: measured points on E(alpha, k)'
set xlabel 'per-token acceptance rate alpha'
set ylabel 'tokens per target pass'
set grid
set key top left
set xrange [0:1]
set yrange [1:7]
plot for [k = 1:6] 'e-alpha-k.dat' using 1:(column(k + 1)) with lines lw 1 lc k title sprintf('k = %d', k), \
     'e-alpha-k-measured.dat' using 2:4:(sprintf('%d', $1)) with labels offset 0,1 notitle, \
     '' using 2:4 with points pt 7 ps 1.5 lc rgb 'black' title 'measured (label: k)'
