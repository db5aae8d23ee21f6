# gnuplot script for `make plots`: the seed tables as charts.
# Called with data='DIR' (written by seed-tables --data) and out='DIR'.
set terminal pngcairo size 800,480 font "DejaVu Sans,11"
set grid ytics
set key top left

set output out.'/moved.png'
set title "Keys moved when a node joins (10,000 keys)"
set ylabel "fraction of keys moved"
set yrange [0:1.35]
set key top center horizontal
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
plot data.'/moved.dat' using 2:xtic(1) title "hash % N", \
     '' using 3 title "ring, xxh3 mode", \
     '' using 4 title "ring, seed mode (hash\\_str)"

set key top right vertical
set output out.'/skew.png'
set title "Skew between 4 nodes: max - min share of 10,000 keys"
set style data linespoints
set logscale x
set xlabel "virtual nodes per node"
set ylabel "max share - min share"
set yrange [0:1.05]
set xtics (1, 10, 100, 200)
plot data.'/skew.dat' using 1:2 title "xxh3 mode" lw 2 pt 7, \
     '' using 1:3 title "seed mode (hash\\_str, short keys)" lw 2 pt 5
unset logscale x

set output out.'/fpr.png'
set title "False-positive rate as a filter fills (n = 100,000, p = 1%, k = 7)"
set xlabel "keys added / capacity"
set ylabel "false-positive rate"
set xrange [0:2.1]
set yrange [0:*]
set xtics auto
set key top left
# the filter's own m/n = 958976 / 100000 bits per key, k = 7
f(x) = (1 - exp(-7 * x / 9.58976)) ** 7
plot f(x) title "(1 - e^{-kn/m})^k" with lines lw 2, \
     data.'/fpr.dat' using 1:2 title "measured" with points pt 7 ps 1.5, \
     '' using 1:4 title "estimated from set bits" with points pt 4 ps 1.5
